#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# cloak's Debian packages installed on a systemd Debian 13 as an
# administrator installs them, with apt and no network (their Debian
# dependencies are in the image already): every package installs, the
# units they ship are clean to systemd-analyze, the monitor runs on the
# real kvm_amd. As root (tests/sysvm/in-sysvm, first boot).
bats_require_minimum_version 1.5.0
load helpers

@test "kvm_amd was loaded at boot by udev, from the CPU's modalias, and /dev/kvm is group kvm's" {
	# Nothing of the suite loads it: this is how cloak finds KVM on any
	# AMD machine.
	udevadm settle --timeout=120
	grep -q '^kvm_amd ' /proc/modules
	[ -c /dev/kvm ]
	[ "$(stat -c %G /dev/kvm)" = kvm ]
}

@test "apt install ./PACKAGE.deb installs every package under test, with no network" {
	cd "$DEBS"
	local debs=(./*.deb)
	[ "${#debs[@]}" -gt 0 ]
	run env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${debs[@]}"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	local d p
	for d in "${debs[@]}"; do
		p=$(dpkg-deb -f "$d" Package)
		[ "$(dpkg-query -W -f '${db:Status-Status} ${Version}' "$p")" = "installed $(dpkg-deb -f "$d" Version)" ] ||
			{ echo "$p: $(dpkg-query -W -f '${db:Status-Status} ${Version}' "$p")"; return 1; }
	done
	# Nothing came from an archive: the VM has no network.
	run ! ip route get 1.1.1.1
}

@test "every unit the packages ship is clean to systemd-analyze verify (system units as root, user units as the user)" {
	local d pkgs=() units u name n=0
	for d in "$DEBS"/*.deb; do pkgs+=("$(dpkg-deb -f "$d" Package)"); done
	units=$(dpkg -L "${pkgs[@]}" | grep -E '^/usr/lib/systemd/(system|user)/[^/]+\.(service|socket)$' | sort -u)
	[ -n "$units" ] || { echo "the packages ship no systemd unit"; return 1; }
	for u in $units; do
		n=$((n + 1))
		name=${u##*/}
		# A template is verified as an instance of it.
		[[ $name == *@.* ]] && name=${name/@./@sysvm.}
		if [[ $u == */user/* ]]; then
			run as_user "systemd-analyze --user verify --man=no $name 2>&1"
		else
			run systemd-analyze verify --man=no "$name"
		fi
		[ "$status" -eq 0 ] && [ -z "$output" ] || { echo "$name: $output"; return 1; }
	done
	echo "$n units verified"
}

@test "the monitor finds the real kvm_amd: cloak check names a protected default (gmem on 7.x)" {
	run cloak check
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[[ $output == *"default (--memory=auto): gmem"* ]] || { echo "$output"; return 1; }
}
