# SPDX-License-Identifier: ISC
# The SVM tier (docs/svm-tier.md): the guest-booting suites, `cloak check`
# and the benchmarks inside a VM whose KVM is the real kvm_amd (QEMU TCG
# with an emulated SVM CPU), on Debian's stock kernels. SVM_KERNELS picks
# kernels and parts (e.g. SVM_KERNELS="6.12 7@trixie-backports 6.1:demo";
# :demo runs make demo and cloak check only, tests/svm/demo-in-vm; :base,
# :token and :agent share one kernel's steps out over VMs; the default is
# in tests/svm/run-svm and docs/svm-tier.md).
.PHONY: check-svm bench-svm
check-svm: all
	O=$(O) tests/svm/run-svm $(SVM_KERNELS)
bench-svm: all
	O=$(O) tests/svm/run-svm --bench $(SVM_KERNELS)
# The tier's own logic, checked on the host by make check.
TESTS += tests/svm/tier.bats
