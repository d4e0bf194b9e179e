#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# The seams of the architecture (docs/design.md), checked by folder, and
# the tables that must agree. Each check lists what it found, so a failure
# names the file that crossed a seam.
bats_require_minimum_version 1.5.0

ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
M=$ROOT/monitor

# only FILE... : fails unless the files given on stdin are exactly these.
only() {
	local got want
	got=$(sort -u)
	want=$(printf '%s\n' "$@" | sort -u)
	[ "$got" = "$want" ] || { printf 'got:\n%s\nwant:\n%s\n' "$got" "$want"; return 1; }
}

@test "only mem/ holds the host mapping of guest memory" {
	cd "$M"
	grep -rl '#include "backend.h"\|#include "mem/backend.h"' . | only ./mem/guestmem.c \
		./mem/backend.c ./mem/wipe.c
	# guestmem.h hands out no pointer into guest memory: the functions that
	# return a pointer return the opaque handle or a string.
	grep -oE '^[a-z_ ]+\*[a-z_]+\(' mem/guestmem.h | only 'struct guestmem *gm_create(' \
		'const char *gm_backend_name(' 'const char *gm_describe('
	# The struct is opaque outside guestmem.c.
	grep -rl 'struct guestmem {' . | only ./mem/guestmem.c
	# Nothing but mem/ touches a guest mapping's bytes through gm_slot's
	# address (it is for KVM and cloak check's system calls).
	run -1 grep -rnE 'userspace_addr *\+|\(void \*\)\(uintptr_t\)slot\.userspace_addr\)\[' .
}

@test "only the dispatcher reads guest call blocks, and call files only decode and encode" {
	cd "$M"
	grep -rl 'gm_copy_from(vm->gm, args' . | only ./calls/dispatch.c
	# The work is done elsewhere: no call file makes a system call itself
	# (core.c only asks for the time and random bytes).
	run -1 grep -nE '\b(read|write|pread|pwrite|ioctl|socket|accept4|open|close|epoll_[a-z0-9]+|ppoll)\(' \
		calls/block.c calls/channel.c calls/poll.c calls/protect.c calls/dispatch.c
	run -1 grep -nE '\b(read|write|pread|pwrite|ioctl|socket|open|close)\(' calls/core.c
	# Every call comes from the one list: no handler table written by hand.
	run -1 grep -rn 'hc_table\[\] *=' .
	[ "$(grep -c 'CLOAK_HC_CALLS(' calls/dispatch.c calls/dispatch.h | awk -F: '{s+=$2} END {print s}')" -ge 3 ]
}

@test "devices know nothing of hypercalls; the check is off the run path" {
	cd "$M"
	# The run loop hands port I/O to the dispatcher, directly or through
	# the device process; nothing else below calls/ knows of it.
	grep -rl '#include "calls/' devices mem kvm x86 image process audit cli | only kvm/run.c \
		process/split.c
	# cloak check: only main.c (for the subcommand) reaches into check/.
	grep -rl '#include "check/' . | only ./main.c
	# The inspection interface is for cloak check and tests only.
	grep -rl '#include "mem/inspect.h"\|#include "inspect.h"' . | only ./check/probe_mem.c \
		./mem/guestmem.c ./test_hooks.c
}

@test "one place opens KVM and creates VMs; x86 state lives in x86/" {
	cd "$M"
	grep -rl 'open("/dev/kvm"' . | only ./kvm/kvm.c
	grep -rl 'KVM_CREATE_VM' . | only ./kvm/kvm.c
	# (test_hooks.c tries KVM_SET_REGS only to see the sandbox refuse it.)
	grep -rlE --include='*.c' 'ioctl\(.*KVM_SET_(S?REGS|CPUID2)' . | only ./x86/cpu.c ./x86/vcpu_wipe.c
	# Named constants, not numbers, for x86 bits outside x86/.
	run -1 grep -rnE 'vector (==|<) *[0-9]|error_code & [0-9]' calls kvm
}

@test "one error convention: setup steps take a struct fail, no err/errlen pairs" {
	cd "$M"
	run -1 grep -rnE 'char \*err, size_t errlen|int \*exit_status|int \*status\)' .
	run -1 grep -rn 'return snprintf(err' .
}

@test "the design picture lists every monitor source file, and nothing else" {
	local pic
	# The first code block of docs/design.md is the monitor's picture.
	pic=$(awk '/^```$/ { n++; next } n == 1' "$ROOT/docs/design.md")
	local missing=0
	while read -r f; do
		grep -qF "$f" <<<"$pic" || { echo "not in docs/design.md: monitor/$f"; missing=1; }
	done < <(cd "$M" && find . -name '*.c' | sed 's|^\./||' | sort)
	for f in $(grep -oE '[a-z_]+/[a-z_]+\.c' <<<"$pic" | sort -u); do
		[ -f "$M/$f" ] || { echo "docs/design.md names missing monitor/$f"; missing=1; }
	done
	[ "$missing" -eq 0 ]
}

@test "the exit statuses: one table, and --help, cloak(1) and the README list exactly it" {
	local table help man readme
	table=$(grep -oE '^[[:space:]]*X\(2[0-9]{2},' "$M/exit_status.h" | tr -dc '0-9\n' | sort -n)
	[ "$(wc -l <<<"$table")" -ge 10 ]
	help=$("$ROOT/${O:-build}/cloak" --help | sed -n '/^Exit status/,$p' |
		grep -oE '^  2[0-9]{2} ' | tr -dc '0-9\n' | sort -n)
	man=$(sed -n '/^\.SH EXIT STATUS/,/^\.SH [^E]/p' "$ROOT/man/cloak.1" |
		grep -oE '^\.B 2[0-9]{2}$' | tr -dc '0-9\n' | sort -n)
	readme=$(sed -n '/^### Exit status/,/^#/p' "$ROOT/README.md" |
		grep -oE '^\| 2[0-9]{2} \|' | tr -dc '0-9\n' | sort -n)
	[ "$help" = "$table" ] || { echo "--help: $help"; return 1; }
	[ "$man" = "$table" ] || { echo "cloak.1: $man"; return 1; }
	[ "$readme" = "$table" ] || { echo "README: $readme"; return 1; }
	# And each says the same of every status, the guest's 0-239 included
	# (--help prints the table itself; markup and line breaks aside).
	"$ROOT/${O:-build}/cloak" --help >"$BATS_TEST_TMPDIR/help"
	run python3 - "$BATS_TEST_TMPDIR/help" "$ROOT/man/cloak.1" "$ROOT/README.md" <<'PY'
import re, sys
norm = lambda t: " ".join(t.replace("\\-", "-").replace("`", "").replace("\u2013", "-").split())
help_ = open(sys.argv[1]).read().split("Exit status:", 1)[1]
want = {m.group(1): norm(m.group(2)) for m in re.finditer(r"^ +([0-9-]+) +(.*)$", help_, re.M)}
man = open(sys.argv[2]).read().split(".SH EXIT STATUS", 1)[1].split(".PP", 1)[0]
got_man = {norm(m.group(1)): norm(m.group(2)) for m in re.finditer(r"^\.B (.*)\n((?:(?!\.TP)[^\n]*\n?)*)", man, re.M)}
readme = open(sys.argv[3]).read().split("### Exit status", 1)[1].split("\n#", 1)[0]
got_readme = {norm(m.group(1)): norm(m.group(2)) for m in re.finditer(r"^\| ([0-9\u2013-]+) \| (.*) \|$", readme, re.M)}
bad = [("cloak.1", k, v, got_man.get(k)) for k, v in want.items() if got_man.get(k) != v]
bad += [("README", k, v, got_readme.get(k)) for k, v in want.items() if got_readme.get(k) != v]
for b in bad: print("%s, status %s: says %r, --help says %r" % (b[0], b[1], b[3], b[2]))
sys.exit(1 if bad or len(want) < 11 else 0)
PY
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
}

@test "everything make bench runs is built by make all, so make bench works in a fresh clone" {
	# --no-print-directory: a make -C above this one would add its lines.
	run make -s --no-print-directory -C "$ROOT" O="${O:-build}" bench-list
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	[ "${#lines[@]}" -ge 4 ] || { echo "$output"; return 1; }
	for b in "${lines[@]}"; do
		[ -x "$ROOT/$b" ] || { echo "$b is not built by make all"; return 1; }
	done
}

@test "every source file carries a licence line; a LICENSE file exists" {
	cd "$ROOT"
	[ -f LICENSE ]
	local bad
	bad=$(git ls-files '*.c' '*.h' '*.S' '*.bats' '*.bash' '*.mk' '*.ld' 'Makefile' \
		'scripts/*' 'bench/run-*' 'tests/harness/*' '.ci/run' |
		while read -r f; do head -3 "$f" | grep -q 'SPDX-License-Identifier' || echo "$f"; done)
	[ -z "$bad" ] || { echo "no SPDX line: $bad"; return 1; }
}

@test "code and docs do not lean on things outside the repository" {
	cd "$ROOT"
	run -1 git grep -nIiE "\.\./shared|the seed('s)?\b|\bissue [0-9]+\b|these machines|kvmcaps\.c|host-facts" \
		-- ':!tests/unit/structure.bats'
}

@test "the README's host table, docs/running.md and cloak(1) name the same hosts, and say VMX is untested" {
	cd "$ROOT"
	local readme running man k
	readme=$(sed -n '/^## Quick start/,/^## Running guests/p' README.md | tr '\n' ' ')
	running=$(tr '\n' ' ' <docs/running.md)
	man=$(sed 's/\\f[BIR]//g' man/cloak.1 | tr '\n' ' ')
	for k in "6.1" "6.12" "6.8" "6.18" "Ubuntu 24.04" "Ubuntu 26.04" "kvm_pvm" "VMX cannot be tested" "untested"; do
		[[ $readme == *"$k"* ]] || { echo "README's quick start lacks '$k'"; return 1; }
		[[ $running == *"$k"* ]] || { echo "docs/running.md lacks '$k'"; return 1; }
		[[ $man == *"$k"* ]] || { echo "cloak.1 lacks '$k'"; return 1; }
	done
	for k in "Debian 12" "Debian 13"; do
		[[ $readme == *"$k"* ]] || { echo "README's quick start lacks '$k'"; return 1; }
		[[ $running == *"$k"* ]] || { echo "docs/running.md lacks '$k'"; return 1; }
	done
	# The quick start is for every host, and the project's machines have
	# no emulating KVM any more.
	run -1 grep -nE '^## Quick start.*Debian|build machines of this project' README.md
}

@test "the key services are rooms: no #include \"../\" leads into or out of services/NAME or examples/" {
	cd "$ROOT"
	# room PATH: services/NAME for the key services, else the top-level folder.
	room() { case $1 in services/*) cut -d/ -f1-2 <<<"$1" ;; *) cut -d/ -f1 <<<"$1" ;; esac; }
	local f inc to crossed=()
	while IFS=: read -r f inc; do
		inc=${inc#\#include \"}
		to=$(realpath -m --relative-to=. "$(dirname "$f")/${inc%\"}")
		[ "$(room "$f")" = "$(room "$to")" ] && continue
		[[ $(room "$f") == services/* || $(room "$to") == services/* ||
			$(room "$f") == examples || $(room "$to") == examples ]] && crossed+=("$f -> $to")
	done < <(git grep -oE '#include "\.\./[^"]+"' -- '*.c' '*.h' '*.S')
	[ "${#crossed[@]}" -eq 0 ] || { printf 'crosses a room: %s\n' "${crossed[@]}"; return 1; }
	# The build passes the include folders instead; tools/ is gone.
	[ ! -e tools ]
}

@test "nothing make install installs is built from examples/" {
	# Every command that builds what install installs, from scratch (-B)
	# in a build directory of its own, without running any.
	run make -s --no-print-directory -n -B -C "$ROOT" install O="$BATS_TEST_TMPDIR/o" \
		PREFIX=/usr DESTDIR="$BATS_TEST_TMPDIR/d"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	# Control: the list reaches the services' guests' sources.
	[[ $output == *services/ssh-agent/guest/main.c* && $output == *services/pkcs11/guest/main.c* ]] ||
		{ echo "$output"; return 1; }
	run -1 grep -n 'examples/' <<<"$output"
}
