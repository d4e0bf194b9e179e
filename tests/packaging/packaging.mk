# SPDX-License-Identifier: ISC
# make check-packages: the Debian packages built from a clean clone of
# HEAD and checked (tests/packaging/packages.bats): not part of make check,
# since it builds everything again and, the first time, debootstraps a
# Debian root (cached in /var/cache/cloak-packaging). As root.
.PHONY: check-packages
check-packages:
	tests/harness/run-tests tests/packaging/packages.bats
