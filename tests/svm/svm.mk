# SPDX-License-Identifier: ISC
# The SVM tier (docs/svm-tier.md): the guest-booting suites, `cloak check`
# and the benchmarks inside a VM whose KVM is the real kvm_amd (QEMU TCG
# with an emulated SVM CPU), on Debian's stock kernels. SVM_KERNELS picks
# kernels and parts (e.g. SVM_KERNELS="6.12 7@trixie-backports 6.1:demo";
# :demo runs make demo and cloak check only, tests/svm/demo-in-vm; :base,
# :kernel, :token and :agent share one kernel's steps out over VMs; the default is
# in tests/svm/run-svm and docs/svm-tier.md).
.PHONY: check-svm bench-svm
check-svm: all
	O=$(O) tests/svm/run-svm $(SVM_KERNELS)
bench-svm: all
	O=$(O) tests/svm/run-svm --bench $(SVM_KERNELS)
# The tier's own logic, checked on the host by make check.
TESTS += tests/svm/tier.bats
# The system VM suite (tests/sysvm/run-sysvm): cloak's Debian packages
# installed and run as users run them, on a systemd Debian 13 booted in
# the tier's VM. It builds the packages (tests/sysvm/build-debs) unless
# SYSVM_DEBS (and SYSVM_NEXT_DEBS, for the upgrade) name them;
# sysvm-image only builds the image's first layer, which needs no package.
.PHONY: check-sysvm sysvm-image
check-sysvm:
	O=$(O) tests/sysvm/run-sysvm $(SYSVM_DEBS) $(SYSVM_NEXT_DEBS)
sysvm-image:
	O=$(O) tests/sysvm/run-sysvm --image
TESTS += tests/sysvm/host.bats
