# SPDX-License-Identifier: ISC
$(eval $(call unit_test,test_options,,))
$(eval $(call unit_test,test_pagetable,,))
$(eval $(call unit_test,test_guestmem,,))
TESTS += tests/unit/structure.bats
$(eval $(call unit_test,test_host_paths,,))
$(eval $(call unit_test,test_device_maps,,))
$(eval $(call unit_test,test_handoff,,))
