#!/usr/bin/env bats
# SPDX-License-Identifier: ISC
# scripts/check-docs (make lint) on a small tree of its own: a doc that
# names only what the tree has passes, and each kind of stale name is
# caught, one doc per kind, with the line it is on.
bats_require_minimum_version 1.5.0

ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
CHECK=$ROOT/scripts/check-docs

setup() {
	T=$BATS_TEST_TMPDIR/tree
	mkdir -p "$T"/{src,scripts,docs,man,tests/unit,tests/mutants}
	cat >"$T/Makefile" <<'EOF'
O ?= build
PREFIX ?= /usr/local
LOOPS ?= 20
.PHONY: all check lint install
all: $(O)/tool $(O)/tests/test_tool
$(O)/tool: src/tool.c
	cc -o $@ $<
$(O)/tests/test_tool: tests/unit/test_tool.c
	cc -o $@ $<
check: all
	scripts/run $(LOOPS)
lint:
install: $(O)/tool
	install -m 755 $(O)/tool $(DESTDIR)$(PREFIX)/bin/tool
EOF
	cat >"$T/src/tool.c" <<'EOF'
/* tool: stale_name() is only in this comment. */
#include <stdlib.h>
#define CLOAK_LIMIT 4
static const char *const knobs[] = { "CLOAK_TABLED" };
int tool_run(int x)
{
	return getenv("CLOAK_FOO") ? x : CLOAK_LIMIT + (int)sizeof knobs;
}
EOF
	cat >"$T/scripts/run" <<'EOF'
#!/usr/bin/env bash
# $SVM_GONE is named only in this comment.
mem=${SVM_MEM:-2048}
helper() { echo "$mem $1"; }
helper "${SVM_CPUS:-1}"
EOF
	chmod +x "$T/scripts/run"
	echo 'int main(void) { return 0; }' >"$T/tests/unit/test_tool.c"
	printf '# tool off by one\nfile: src/tool.c\nfrom: x\nto: x + 1\nrun: tests/unit/test_tool.c\n' \
		>"$T/tests/mutants/tool-off-by-one.mut"
	printf '.TH TOOL 1\n.SH NAME\ntool\n' >"$T/man/tool.1"
	cat >"$T/docs/other.md" <<'EOF'
# Other

## Two processes

Text.
EOF
}

# doc TEXT: docs/case.md of the fixture tree, the checker run on it alone.
doc() {
	printf '%s\n' "$@" >"$T/docs/case.md"
	run "$CHECK" --root "$T" docs/case.md
}

# caught LINE MESSAGE: the checker failed, naming that line and message.
caught() {
	[ "$status" -eq 1 ] || { echo "status $status: $output"; return 1; }
	[[ $output == *"docs/case.md:$1: $2"* ]] || { echo "want docs/case.md:$1: $2, got: $output"; return 1; }
}

@test "check-docs: a doc naming only what the tree has passes (the control)" {
	doc '# Case' '' \
		'`src/tool.c`, `tool_run()`, `tool_run(3)`, `scripts/run`, `src/`, `tests/unit/test_tool.c`,' \
		'`test_tool`, `tool.c`, `build/tool`, `$O/tests/test_tool`, `$PREFIX/bin/tool`,' \
		'`make check`, `LOOPS=3 make -j2 lint`, `CLOAK_FOO`, `CLOAK_LIMIT`, `CLOAK_TABLED`,' \
		'`SVM_MEM` (MiB, default 2048), `SVM_CPUS`, default 1, `LOOPS` (default 20),' \
		'`tool-off-by-one`, `docs/other.md`, "Two processes"; [other](other.md#two-processes),' \
		'the mutant `tool-gone-away` was retired; BearSSL'"'"'s `src/inner.h` and `br_foo()`,' \
		'`mlock(2)`, `/proc/self/maps`, `$SOLO5_DIR/tests/x.c`, `DIR/token.log`, "Case" above.' \
		'' '```sh' 'make check   # a comment naming `nothing.c`' 'cc -o prog prog.c' '```' \
		'' '```output' 'src/gone.c: printed by a command, not checked' '```'
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
}

@test "check-docs: a file of a top-level folder that does not exist" {
	doc 'x' '`src/gone.c` is gone'
	caught 2 '`src/gone.c`: no such file or folder in the tree'
}

@test "check-docs: a path in a shell block, and a moved file with where its name is now" {
	doc '```sh' 'scripts/run' 'cat src/old/tool.c' '```'
	caught 3 '`src/old/tool.c`: no such file or folder in the tree (a file of that name: src/tool.c)'
}

@test "check-docs: a build output no make rule makes" {
	doc '`build/nothing` and `$(O)/tests/test_gone`'
	caught 1 '`build/nothing`: not made by the make rules'
	caught 1 '`$(O)/tests/test_gone`: not made by the make rules'
}

@test "check-docs: an installed file no install rule writes, and an install path without \$PREFIX" {
	doc '`$PREFIX/bin/other`' '`bin/tool`'
	caught 1 '`$PREFIX/bin/other`: no install rule writes it'
	caught 2 '`bin/tool`: not in the tree; an installed file is written $PREFIX/bin/tool'
}

@test "check-docs: a folder-relative path, a bare file name and a folder that the tree lacks" {
	doc '`unit/test_tool.c` and `unit/none.h`' '`nothing.bats`' '`nowhere/`'
	caught 1 '`unit/none.h`: no tree path ends so'
	caught 2 '`nothing.bats`: no file of that name in the tree'
	caught 3 '`nowhere/`: no folder of that name in the tree'
}

@test "check-docs: a make target that does not exist" {
	doc 'Run `make check-nothing` or' '`SVM_MEM=1 make -j2 lint gone`.'
	caught 1 '`make check-nothing`: no such make target'
	caught 2 '`make gone`: no such make target'
}

@test "check-docs: a test that does not exist" {
	doc '`test_missing` runs nothing'
	caught 1 '`test_missing`: no test file or test of that name'
}

@test "check-docs: a function that does not exist, even if a comment names it" {
	doc 'It calls `stale_name()`,' '`helper()` and `gone_fn(x, y)`.'
	caught 1 '`stale_name()`: no function or macro of that name'
	caught 2 '`gone_fn()`: no function or macro of that name'
	[[ $output != *'`helper()`'* ]] || { echo "$output"; return 1; }
}

@test "check-docs: an identifier that does not exist, and a man page of ours that does not" {
	doc 'see `stale_name` and' '`cloak_tool(3)`'
	caught 1 '`stale_name`: no identifier of that name'
	caught 2 '`cloak_tool(3)`: no such manual page (man/cloak_tool.3)'
}

@test "check-docs: a knob nothing reads, even if a script's comment names it" {
	doc '`SVM_GONE` and' '`CLOAK_BAR=1`'
	caught 1 '`SVM_GONE`: nothing in the code or scripts reads it'
	caught 2 '`CLOAK_BAR`: nothing in the code or scripts reads it'
}

@test "check-docs: a documented default that is not the code's, in each form the check reads" {
	doc '`SVM_MEM` (MiB, default 3072)' '`SVM_CPUS`, default 2' '`LOOPS=5` (the default)' \
		'`CLOAK_FOO` (default 1)'
	caught 1 '`SVM_MEM`: documented default 3072, the code'"'"'s: 2048 in scripts/run'
	caught 2 '`SVM_CPUS`: documented default 2, the code'"'"'s: 1 in scripts/run'
	caught 3 '`LOOPS`: documented default 5, the code'"'"'s: 20 in Makefile'
	caught 4 '`CLOAK_FOO`: documented default 1, but no script or makefile gives it one'
}

@test "check-docs: a section that does not exist, by title and by link" {
	doc 'See `docs/other.md`, "Three processes".' '[x](other.md#nowhere) and [y](gone.md)' \
		'"Nothing" below'
	caught 1 '"Three processes": no section of docs/other.md begins so'
	caught 2 'link to other.md#nowhere: no such section in docs/other.md'
	caught 2 'link to gone.md: no such file (docs/gone.md)'
	caught 3 '"Nothing": no section of docs/case.md begins so'
}

@test "check-docs: a mutant that does not exist" {
	doc 'caught by `tool-off-by-two`'
	caught 1 '`tool-off-by-two`: no mutant of that name (tests/mutants/tool-off-by-two.mut)'
}

@test "check-docs: a man page's spans are checked too" {
	printf '%s\n' '.TH CASE 1' '.SH NAME' 'case' '.SH SEE ALSO' 'See \fIsrc/gone.c\fR and' \
		'.BR gone_fn ()' 'and \fBmake nothing\fR.' >"$T/man/case.1"
	run "$CHECK" --root "$T" man/case.1
	[ "$status" -eq 1 ] || { echo "status $status: $output"; return 1; }
	[[ $output == *'man/case.1:5: `src/gone.c`: no such file'* ]] || { echo "$output"; return 1; }
	[[ $output == *'man/case.1:6: `gone_fn()`: no function'* ]] || { echo "$output"; return 1; }
	[[ $output == *'man/case.1:7: `make nothing`: no such make target'* ]] || { echo "$output"; return 1; }
}

@test "check-docs: make rules that cannot be read are one finding, not one per build path" {
	echo 'include gone.mk' >>"$T/Makefile"
	doc '`build/tool` and `make check`'
	[ "$status" -eq 1 ] || { echo "status $status: $output"; return 1; }
	[[ $output == *"Makefile:1: make -pq failed, so no make target or build output could be checked: "*gone.mk* ]] ||
		{ echo "$output"; return 1; }
	[ "$(grep -c '^docs/case.md' <<<"$output")" -eq 0 ] || { echo "$output"; return 1; }
}

@test "check-docs: the tree's own docs pass (make lint runs this)" {
	run "$CHECK"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
}
