#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# Threat 1 (the 2020 proposal: host kernel "accidental" access to guest
# data, think speculation): guest RAM is memfd_secret memory, which the kernel removes
# from its direct map as each page is faulted in.
load threat_helpers

maps_line() { grep -E "$1" "/proc/$MON_PID/maps" | head -1; }

@test "guest RAM of a running guest is one secretmem mapping of the guest's size, not dumped" {
	need_kvm; need_root; need_backend secret; new_token
	start_guest -- --memory=secret --mem=64M "$GUESTS/threat_secret.elf" "$TOKEN" 30
	line=$(maps_line secretmem)
	smaps=$(awk -v s="${line%%-*}" '$1 ~ "^"s"-" {p=1} p && /^VmFlags/ {print; exit}' "/proc/$MON_PID/smaps")
	stop_guest
	[ -n "$line" ] || { echo "no secretmem mapping"; return 1; }
	read -r range perms _ <<<"$line"
	lo=$((16#${range%-*})) hi=$((16#${range#*-}))
	[ $((hi - lo)) -eq $((64 << 20)) ] || { echo "size $((hi - lo)): $line"; return 1; }
	[ "$perms" = rw-s ]
	[[ " $smaps " == *" dd "* ]] || { echo "no dd in $smaps"; return 1; }
}

@test "control: with --memory=shared guest RAM is an ordinary memfd, not secretmem" {
	need_kvm; need_root; new_token
	start_guest -- --memory=shared "$GUESTS/threat_secret.elf" "$TOKEN" 30
	secret=$(maps_line secretmem) memfd=$(maps_line 'memfd:cloak-guest')
	stop_guest
	[ -z "$secret" ]
	[ -n "$memfd" ]
}

splits() { awk '/^direct_map_level[23]_splits/ {s += $2} END {print s + 0}' /proc/vmstat; }

@test "faulting guest pages in splits the kernel direct map (when a huge page is left to split)" {
	need_kvm; need_root; new_token
	grep -q '^direct_map_level2_splits' /proc/vmstat || skip "no direct_map counters in /proc/vmstat"
	before=$(splits)
	# The guest faults in 8192 fresh pages (32 MiB) of its private memory.
	start_guest -- --mem=64M "$GUESTS/threat_secret.elf" "$TOKEN" 0 8192
	wait "$MON_PID" || true
	after=$(splits)
	grep -q '8192 pages touched' "$GUEST_OUT"
	echo "# direct_map splits: $before -> $after" >&3
	# Splits are never undone, so on a long-running host the pages may all
	# come from regions split before: the counters cannot move then.
	[ "$after" -gt "$before" ] || skip "counters did not move ($before): every page came from an already split region"
}

@test "where /proc/kcore shows physical memory: is the secret of a running guest in the kernel's direct map?" {
	need_kvm; need_root
	[ -r /proc/kcore ] || skip "no /proc/kcore on this kernel (CONFIG_PROC_KCORE): the split counters above are all there is"
	local backend
	backend=$(auto_backend)
	[ "$backend" != none ] || skip "no protected backend runs on this host"
	new_token
	start_guest -- --memory="$backend" "$GUESTS/threat_secret.elf" "$TOKEN" 30
	# kcore takes the TOKEN: the whole secret in any process's memory (the
	# shell's, the probe's) would be found in RAM too.
	run "$PROBE" "$MON_PID" "$TOKEN" kcore
	local scan=$output
	# Control: the same scan finds a --memory=shared guest's secret.
	stop_guest
	new_token
	start_guest -- --memory=shared "$GUESTS/threat_secret.elf" "$TOKEN" 30
	run "$PROBE" "$MON_PID" "$TOKEN" kcore
	stop_guest
	[[ "$output" == *"kcore: read "*"needle found"* ]] || { echo "control: $output"; return 1; }
	if [ "$backend" = secret ]; then
		# memfd_secret pages leave the direct map as they are faulted in.
		[[ "$scan" == *"needle not found"* ]] || { echo "$scan"; return 1; }
	else
		# guest_memfd pages stay in the direct map (no NO_DIRECT_MAP in
		# any released kernel): docs/threat-model.md says so.
		[[ "$scan" == *"needle found"* ]] || { echo "$scan"; return 1; }
	fi
}
