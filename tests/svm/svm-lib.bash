# SPDX-License-Identifier: ISC
# Shared by the SVM tier's scripts (tests/svm/): where kernels are cached,
# how an apt entry for another suite is derived from this machine's own
# Debian sources, and which kernel modules the VM loads.

# Modules the VM needs, by name; fetch-kernel adds what each depends on
# (modinfo's depends= and softdep=, resolved by depmod and modprobe) and
# leaves out those a kernel has built in. kvm_amd is the point;
# the rest mount the shared directories (virtio-9p) and /tmp (ext4 on
# virtio-blk), and open a LUKS2 image on the token's key (loop, dm_crypt
# and xts, for pkcs11_cryptenroll.bats and the system VM's luks.bats).
# mkfs.ext4, modinfo, depmod and modprobe live in sbin, which an ordinary
# user's PATH leaves out; each works on files of the user's own.
case ":$PATH:" in *:/usr/sbin:*) ;; *) PATH=$PATH:/usr/sbin:/sbin ;; esac
export PATH

SVM_MODULES="kvm_amd virtio_pci 9pnet_virtio 9p virtio_blk ext4 loop dm_crypt xts"
export SVM_MODULES

svm_cache_dir() {
	if [ -n "${CLOAK_SVM_CACHE:-}" ]; then
		printf '%s\n' "$CLOAK_SVM_CACHE"
	elif [ "$(id -u)" = 0 ]; then
		printf '%s\n' /var/cache/cloak-svm
	else
		printf '%s\n' "${XDG_CACHE_HOME:-$HOME/.cache}/cloak-svm"
	fi
}

# svm_machine_sources: this machine's Debian sources file (deb822 first;
# SVM_APT_SOURCES names another, for tests).
svm_machine_sources() {
	local f
	for f in ${SVM_APT_SOURCES:-/etc/apt/sources.list.d/debian.sources /etc/apt/sources.list}; do
		if [ -s "$f" ]; then printf '%s\n' "$f"; return 0; fi
	done
	return 1
}

# svm_derive_sources SUITE [SOURCES-FILE]: prints an apt sources entry for
# SUITE made from the machine's entry for its own release (the stanza or
# line whose suite is the release's code name), with only the suite
# changed: same archive, components and keyring. SOURCES-FILE defaults to
# svm_machine_sources; a file ending in .sources is read as deb822 (and
# the entry printed so), any other in the one-line format. The code name comes from SVM_CODENAME, else
# /etc/os-release. Fails (status 1, prints nothing) if no entry matches.
svm_derive_sources() {
	local suite=$1 file=${2:-} codename=${SVM_CODENAME:-}
	[ -n "$file" ] || file=$(svm_machine_sources) || return 1
	[ -r "$file" ] || return 1
	if [ -z "$codename" ] && [ -r /etc/os-release ]; then
		codename=$(. /etc/os-release && printf '%s' "${VERSION_CODENAME:-}")
	fi
	[ -n "$codename" ] || return 1
	local out
	if [[ $file == *.sources ]]; then
		out=$(awk -v want="$codename" -v suite="$suite" '
			function flush() {
				if (ok && types ~ /(^| )deb( |$)/ && enabled != "no" && !done) {
					print "Types: deb"; print "URIs: " uris; print "Suites: " suite
					print "Components: " comps
					if (signed != "") print "Signed-By: " signed
					done = 1
				}
				ok = 0; types = uris = comps = signed = enabled = ""; last = ""
			}
			/^[ \t]*#/ { next }
			/^[ \t]*$/ { flush(); next }
			/^[ \t]/ { if (last == "signed-by") signed = signed "\n" $0; next }
			{
				key = tolower(substr($0, 1, index($0, ":") - 1)); val = substr($0, index($0, ":") + 1)
				sub(/^[ \t]+/, "", val); sub(/[ \t]+$/, "", val); last = key
				if (key == "types") types = val
				else if (key == "uris") uris = val
				else if (key == "components") comps = val
				else if (key == "signed-by") signed = val
				else if (key == "enabled") enabled = tolower(val)
				else if (key == "suites") { n = split(val, s, /[ \t]+/); for (i = 1; i <= n; i++) if (s[i] == want) ok = 1 }
			}
			END { flush() }' "$file")
	else
		out=$(awk -v want="$codename" -v suite="$suite" '
			$1 == "deb" && !done {
				i = 2
				if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
				if ($(i + 1) == want) { $(i + 1) = suite; print; done = 1 }
			}' "$file")
	fi
	[ -n "$out" ] || return 1
	printf '%s\n' "$out"
}

# svm_of_series SERIES DIR: whether a cached kernel's directory
# (ABI_VERSION, e.g. 6.1.0-57-amd64_6.1.192-3) is of SERIES: 6.1 must not
# take 6.12.N's directories for its own (fetch-kernel removes a series'
# older kernels).
svm_of_series() {
	local b=${2##*/}
	[[ ${b:0:${#1}} == "$1" && ${b:${#1}:1} == [.-] ]]
}

# svm_result_line FILE: the "N passed, N failed, N skipped" line of a
# tests/harness/run-tests log ("" if it has none: the run did not finish).
svm_result_line() {
	grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$1" 2>/dev/null | tail -1
}

# svm_cannot_run REASON: the VM cannot run here at all. Prints one line,
# "$SVM_WHAT: SKIP: REASON" (exit 0), or with CLOAK_REQUIRE_KVM=1, as CI
# sets it, "$SVM_WHAT: FAILED: REASON" (exit 1). SVM_WHAT names the make
# target (check-svm unless set).
svm_cannot_run() {
	if [ "${CLOAK_REQUIRE_KVM:-0}" = 1 ]; then
		echo "${SVM_WHAT:-check-svm}: FAILED: $1 (CLOAK_REQUIRE_KVM=1)"
		exit 1
	fi
	echo "${SVM_WHAT:-check-svm}: SKIP: $1"
	exit 0
}

# svm_need_host [COMMAND:PACKAGE...]: QEMU and the tools every VM of the
# tier needs (the initramfs: a static busybox, cpio; the disks: mkfs.ext4),
# then the caller's own; svm_cannot_run names the first one missing. Sets
# svm_qemu (SVM_QEMU, else qemu-system-x86_64) and svm_busybox.
svm_need_host() {
	local c
	svm_qemu=${SVM_QEMU:-qemu-system-x86_64}
	for c in "$svm_qemu":qemu-system-x86 busybox:busybox-static cpio:cpio mkfs.ext4:e2fsprogs \
		flock:util-linux readelf:binutils "$@"; do
		command -v "${c%%:*}" >/dev/null ||
			svm_cannot_run "${c%%:*} not found; install Debian's ${c#*:} (apt-get install ${c#*:}, or make: .ci/packages)"
	done
	svm_busybox=$(command -v busybox)
	readelf -l "$svm_busybox" | grep -q 'Requesting program interpreter' &&
		svm_cannot_run "$svm_busybox is dynamically linked; the VM needs Debian's busybox-static"
	return 0
}

# svm_initramfs DIR: starts an initramfs tree in DIR (emptied first): the
# static busybox as /svm/busybox, /svm/modules, and the mount points every
# /init of the tier uses. svm_cpio DIR OUT packs it.
svm_initramfs() {
	rm -rf "$1"
	mkdir -p "$1/svm/modules" "$1"/{proc,sys,dev,tmp}
	cp "$svm_busybox" "$1/svm/busybox"
}
svm_cpio() {
	(cd "$1" && find . | cpio -o -H newc --quiet) >"$2"
}

svm_secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", b - a }'; }

# svm_boot LOG TAG TIMEOUT KERNEL INITRD APPEND [QEMU-ARGS...]: boots
# KERNEL under QEMU's TCG with an AMD CPU that has SVM and nested paging
# (SVM_CPUS vCPUs, default 1; SVM_MEM MiB, default 2048), its console in
# LOG (QEMU's own messages in qemu.err beside it), streamed to stdout
# with [TAG] before each line, under `timeout`
# (TIMEOUT seconds: a hung VM cannot hang CI), and returns QEMU's status
# when the VM is off (124 or 137: it ran past TIMEOUT). The kernel always
# gets console=ttyS0, panic=-1 (a panic ends the VM: -no-reboot) and
# mitigations=off (speculation barriers cost much under TCG and change
# nothing KVM does for cloak). Sets svm_boot_s to the seconds from QEMU's
# start to the first console line matching SVM_BOOT_MARK (default
# '^svm: first command'; empty if none came) and svm_vm_s to the seconds
# QEMU ran. Stopping the caller (TERM, INT) stops the VM; after it,
# TERM and INT make the caller exit 130.
svm_boot() {
	local log=$1 tag=$2 tmo=$3 kernel=$4 initrd=$5 append=$6 t0 qpid tpid qst
	shift 6
	svm_boot_s=""
	: >"$log"
	t0=$(date +%s.%N)
	timeout -k 10 "$tmo" "${svm_qemu:-${SVM_QEMU:-qemu-system-x86_64}}" -nodefaults -no-user-config -no-reboot \
		-accel tcg -cpu EPYC,+svm,+npt -smp "${SVM_CPUS:-1}" -m "${SVM_MEM:-2048}" \
		-display none -monitor none -serial "file:$log" \
		-kernel "$kernel" -initrd "$initrd" \
		-append "console=ttyS0 panic=-1 mitigations=off $append" \
		"$@" 2>"${log%/*}/qemu.err" &
	qpid=$!
	# timeout passes a TERM on to QEMU: stopping this job stops its VM.
	trap 'kill "$qpid" 2>/dev/null; exit 130' TERM INT
	tail -n +1 -F --pid="$qpid" "$log" 2>/dev/null | sed -u "s/^/[$tag] /" &
	tpid=$!
	while kill -0 "$qpid" 2>/dev/null; do
		if [ -z "$svm_boot_s" ] && grep -q -- "${SVM_BOOT_MARK:-^svm: first command}" "$log" 2>/dev/null; then
			svm_boot_s=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
		fi
		sleep 0.2
	done
	wait "$qpid"
	qst=$?
	wait "$tpid" 2>/dev/null
	trap 'exit 130' TERM INT
	# shellcheck disable=SC2034 # read by the callers
	svm_vm_s=$(svm_secs "$t0" "$(date +%s.%N)")
	return "$qst"
}

# svm_boot_failure STATUS LIMIT LOG: why a VM that svm_boot ran ended
# with STATUS (nothing when QEMU exited 0); LIMIT names its time limit
# (e.g. SVM_TIMEOUT=2400).
svm_boot_failure() {
	if [ "$1" -eq 124 ] || [ "$1" -eq 137 ]; then
		echo "the VM ran past $2 s and was killed"
	elif [ "$1" -ne 0 ]; then
		echo "QEMU exited $1: $(tail -1 "${3%/*}/qemu.err" 2>/dev/null)"
	fi
}

# svm_summarize KDIR [PART]: one line for the kernel's run (of PART), in
# run-tests form, into the array final; also echoes each backend's line.
# Reads $results (run-svm's results directory) and $mode; sets rc=1 on any
# failure.
svm_summarize() {
	local kd=$1 part=${2:-} abi ver od p=0 f=0 s=0 parts=() line
	read -r abi ver <"$kd/version"
	od=$results/$abi${part:+.$part}
	abi=$abi${part:+ $part}
	[ -f "$od/boot" ] && echo "svm $abi: $(cat "$od/boot")"
	if [ -s "$od/failed" ]; then
		echo "svm $abi: FAILED: $(cat "$od/failed")"
		f=$((f + 1))
	fi
	if [ "$mode" = bench ]; then
		if [ -s "$od/bench.md" ] && [ "$(cat "$od/exit" 2>/dev/null)" = 0 ]; then
			p=$((p + 1))
			printf '\nHost load average at the end (outside the VM): %s.\n' \
				"$(cut -d' ' -f1-3 /proc/loadavg)" >>"$od/bench.md"
		else
			f=$((f + 1))
		fi
		parts+=("benchmarks: $od/bench.md")
	elif [ ! -s "$od/summary" ]; then
		[ -s "$od/failed" ] || f=$((f + 1))
		parts+=("no results")
	else
		while IFS= read -r line; do
			echo "svm $abi: $line"
			if [[ $line =~ ^([a-z-]+):\ ([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped ]]; then
				p=$((p + BASH_REMATCH[2])) f=$((f + BASH_REMATCH[3])) s=$((s + BASH_REMATCH[4]))
				parts+=("${BASH_REMATCH[1]}")
			elif [[ $line == *": not applicable:"* ]]; then
				parts+=("${line%%:*} n/a")
			elif [[ $line == "cloak check: passed"* || $line == "make demo: passed"* ]]; then
				p=$((p + 1))
				parts+=("${line%%:*}")
			else
				f=$((f + 1))
				parts+=("${line%%:*} FAILED")
			fi
		done <"$od/summary"
	fi
	((f == 0)) || rc=1
	local list
	list=$(printf '%s, ' "${parts[@]}")
	final+=("svm $abi ($ver): $p passed, $f failed, $s skipped (${list%, }) in $(cat "$od/seconds" 2>/dev/null || echo '?') s")
}

# svm_run KDIR MODE SHARD PART KERNEL: one of run-svm's runs, as a line
# (SHARD or PART may be empty; KERNEL as given, e.g. 7@trixie-backports).
svm_run() { printf '%s|%s|%s|%s|%s\n' "$1" "$2" "$3" "$4" "$5"; }

# svm_summarize_runs RUN...: svm_summarize for each run (svm_run), in order.
svm_summarize_runs() {
	local r kd part
	for r in "$@"; do
		IFS='|' read -r kd _ _ part _ <<<"$r"
		svm_summarize "$kd" "$part"
	done
}
