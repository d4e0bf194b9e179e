# SPDX-License-Identifier: ISC
# --channel NAME=fd:N (a socket passed by systemd's socket activation).
$(eval $(call unit_test,test_channel_fd,,))
