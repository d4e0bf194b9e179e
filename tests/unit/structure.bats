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
	grep -rlE '#include "(mem/)?(backend|guestmem_impl)\.h"' . | only ./mem/guestmem.c \
		./mem/backend.c ./mem/wipe.c ./mem/device_view.c ./mem/guestmem_impl.h
	# guestmem.h hands out no pointer into guest memory: the functions that
	# return a pointer return the opaque handle or a string.
	grep -oE '^[a-z_ ]+\*[a-z_]+\(' mem/guestmem.h | only 'struct guestmem *gm_create(' \
		'const char *gm_backend_name(' 'const char *gm_describe('
	# The struct is opaque outside mem/.
	grep -rl 'struct guestmem {' . | only ./mem/guestmem_impl.h
	# Nothing but mem/ touches a guest mapping's bytes through gm_slot's
	# address (it is for KVM and cloak check's system calls).
	run -1 grep -rnE 'userspace_addr *\+|\(void \*\)\(uintptr_t\)slot\.userspace_addr\)\[' .
}

@test "calls/ alone reads call blocks; handlers only decode and encode" {
	cd "$M"
	grep -rl 'gm_copy_from(gm, c->args' . | only ./calls/calls.c
	# The work is done elsewhere: no handler file makes a system call of
	# its own (the runner's calls only ask for the time and random bytes).
	run -1 grep -nE '\b(read|write|pread|pwrite|ioctl|socket|accept4|open|close|epoll_[a-z0-9]+|ppoll)\(' \
		device/call_block.c device/call_channel.c device/call_poll.c device/call_console.c \
		device/dispatch.c calls/calls.c
	run -1 grep -nE '\b(read|write|pread|pwrite|ioctl|socket|open|close)\(' runner/own_calls.c
	# Every call comes from the one list, and each process answers its own
	# list: no handler table written by hand.
	run -1 grep -rnE '(hc|call)_table\[\] *=' .
	grep -q 'CLOAK_RUNNER_CALLS(RUNNER_CASE_)' runner/run.c
	grep -q 'CLOAK_DEVICE_CALLS(DEVICE_CASE_)' device/dispatch.c
	grep -q 'CLOAK_HC_CALLS(CALL_ENTRY_)' calls/calls.c
}

@test "the process boundary: the device process cannot name KVM, the vCPU or the runner" {
	cd "$M"
	# device/ holds what runs only in the device process: nothing of KVM,
	# of the runner or of the guest memory's inside.
	run -1 grep -rnE '#include "(runner|kvm|x86|setup)/|kvm_compat|linux/kvm\.h|\bioctl\(|KVM_' device
	# The runner reaches the device code only for --no-device-isolation,
	# through its one interface.
	grep -rh '#include "device/' runner | only '#include "device/device.h"'
	# The hand-off protocol knows neither side.
	run -1 grep -rnE '#include "(runner|device|kvm|mem|setup)/' handoff
	# Only the set-up forks the device process; the device process's own
	# view of guest memory is the device process's (and cloak check's, which
	# forks one to probe it).
	grep -rl 'device_serve(' . | only ./device/serve.c ./device/serve.h ./setup/spawn.c
	grep -rl '#include "mem/device_view.h"' . | only ./device/serve.c ./check/probe_split.c
	# Nothing below runner/ and device/ knows the calls but calls/ itself.
	grep -rl '#include "calls/' . | only ./runner/runner.h ./device/device.h
	# cloak check: only main.c (for the subcommand) reaches into check/.
	grep -rl '#include "check/' . | only ./main.c
	# The inspection interface is for cloak check and tests only.
	grep -rl '#include "mem/inspect.h"\|#include "inspect.h"' . | only ./check/probe_mem.c \
		./mem/guestmem.c ./test_hooks.c
}

@test "every monitor file that calls a test hook is built again for the test monitor (MONITOR_HOOKS_SRC)" {
	# A caller left out of the list links the shipped object, where every
	# hook is an empty inline: its hook would never fire in cloak-hooks.
	cd "$ROOT"
	grep -rlE '\btest_hooks_[a-z_]+\(' monitor --include=*.c | grep -v '^monitor/test_hooks.c$' |
		only $(sed -n '/^MONITOR_HOOKS_SRC :=/,/[^\\]$/p' monitor/build.mk |
			sed 's/^MONITOR_HOOKS_SRC :=//; s/\\$//' | tr ' \t' '\n\n' | grep -v '^$' |
			grep -v '^monitor/test_hooks.c$')
}

@test "no circle between files of different folders of the monitor" {
	# An arrow from a.c to b.c where a.c includes b.h (b.c beside it); a
	# circle through two folders means two modules each lean on the other.
	run python3 - "$M" <<'PY'
import os, re, sys
root = sys.argv[1]
files = {}
for d, _, fs in os.walk(root):
    for f in fs:
        if f.endswith(".c"):
            rel = os.path.relpath(os.path.join(d, f), root)
            files[rel] = open(os.path.join(d, f)).read()
def target(src, inc):
    c = inc[:-2] + ".c"
    for cand in (os.path.normpath(os.path.join(os.path.dirname(src), c)), c):
        if cand in files and cand != src:
            return cand
edges = {f: {t for t in (target(f, i) for i in re.findall(r'#include "([^"]+\.h)"', s)) if t}
         for f, s in files.items()}
def folder(f): return os.path.dirname(f)
bad = []
def walk(path, seen):
    for t in edges[path[-1]]:
        if t == path[0] and len({folder(p) for p in path}) > 1:
            bad.append(" -> ".join(path + [t]))
        elif t not in seen and len(path) < 8:
            walk(path + [t], seen | {t})
for f in files:
    walk([f], {f})
for b in sorted(set(bad)): print(b)
sys.exit(1 if bad else 0)
PY
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
}

@test "the runner's per-exit path and its half of the hand-off fit in one sitting" {
	# docs/design.md counts them; the count must be true and at most 600.
	local files n said
	files=$(sed -n 's/^<!-- per-exit: \(.*\) -->$/\1/p' "$ROOT/docs/design.md")
	[ -n "$files" ]
	n=$(cd "$ROOT" && cat $files | wc -l)
	said=$(grep -oE 'per-exit path is [0-9]+ lines' "$ROOT/docs/design.md" | grep -oE '[0-9]+')
	[ "$n" -le 600 ] || { echo "$n lines: $files"; return 1; }
	[ "$n" = "$said" ] || { echo "docs/design.md says $said, the files have $n"; return 1; }
}

@test "one error convention: setup steps take a struct fail, no err/errlen pairs" {
	cd "$M"
	run -1 grep -rnE 'char \*err, size_t errlen|int \*exit_status|int \*status\)' .
	run -1 grep -rn 'return snprintf(err' .
}

@test "the design picture lists every monitor source file, and nothing else" {
	local pic
	# The code block under "Every module" in docs/design.md is the monitor's.
	pic=$(awk '/^## Every module/ { s = 1 } s && /^```$/ { n++; next } s && n == 1' "$ROOT/docs/design.md")
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
	local bad l1 l2 l3
	bad=$(git ls-files '*.c' '*.h' '*.S' '*.bats' '*.bash' '*.mk' '*.ld' 'Makefile' \
		'scripts/*' 'bench/run-*' 'tests/harness/*' '.ci/run' |
		while read -r f; do
			# bash's own read, no process a file: a few hundred files
			l1="" l2="" l3=""
			{ read -r l1; read -r l2; read -r l3; } <"$f"
			[[ "$l1$l2$l3" == *SPDX-License-Identifier* ]] || echo "$f"
		done)
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
