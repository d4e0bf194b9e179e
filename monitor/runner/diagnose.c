/* SPDX-License-Identifier: ISC */
/* Explaining KVM failures to the person who ran the guest; see diagnose.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cloak/abi.h"
#include "exit_status.h"
#include "x86/x86.h"
#include "diagnose.h"

int run_error_diagnosis(int err, enum gm_backend backend, char *msg, size_t len)
{
	if (err == EFAULT && backend == GM_BACKEND_SECRET) {
		/* KVM on VMX/SVM faults guest pages in with GUP, which refuses
		 * secretmem; a KVM that emulates guest code reads through the
		 * monitor's mapping instead, so there it works. */
		snprintf(msg, len, "KVM_RUN failed with EFAULT: this host's KVM cannot run "
			 "guests from memfd_secret memory (it faults guest pages in with GUP, "
			 "which secret memory refuses); leave --memory unset to use the "
			 "strongest backend this host runs");
		return CLOAK_EXIT_NOHOST;
	}
	snprintf(msg, len, "KVM_RUN failed: %s", strerror(err));
	return CLOAK_EXIT_CRASH;
}

void run_hlt_diagnosis(uint64_t rip, int before, int at, char *msg, size_t len)
{
	/* Code the guest has not shared cannot be read: then the one-byte
	 * hlt KVM stepped over is the byte before rip. */
	if (rip > 0 && (before == 0xf4 || (before < 0 && at != 0xf4)))
		snprintf(msg, len, "guest halted (hlt at rip 0x%llx) without calling exit",
			 (unsigned long long)(rip - 1));
	else if (at == 0xf4)
		snprintf(msg, len, "guest halted (hlt at rip 0x%llx) without calling exit",
			 (unsigned long long)rip);
	else
		snprintf(msg, len, "guest halted without calling exit (a prefixed hlt ending at "
			 "rip 0x%llx)", (unsigned long long)rip);
}

void run_shutdown_diagnosis(bool reset, uint64_t rip, uint64_t last_rip, char *msg, size_t len)
{
	char last[80] = "";
	if (last_rip)
		snprintf(last, sizeof last, "; its last exit to the monitor was at rip 0x%llx",
			 (unsigned long long)last_rip);
	if (reset)
		snprintf(msg, len, "guest triple-faulted (KVM_EXIT_SHUTDOWN) at an unknown "
			 "address (this host's KVM resets the vCPU on a triple fault, which "
			 "erases where it was%s): an exception arrived with no usable IDT or "
			 "stack", last);
	else
		snprintf(msg, len, "guest triple-faulted (KVM_EXIT_SHUTDOWN) at rip 0x%llx: an "
			 "exception arrived with no usable IDT or stack", (unsigned long long)rip);
}

/* Skips legacy and REX prefixes; returns the index of the opcode. */
static size_t opcode_start(const uint8_t *b, size_t n)
{
	size_t i = 0;
	while (i < n && (b[i] == 0x66 || b[i] == 0x67 || b[i] == 0xf2 || b[i] == 0xf3 ||
			 b[i] == 0x2e || b[i] == 0x3e || b[i] == 0x26 || b[i] == 0x36 ||
			 b[i] == 0x64 || b[i] == 0x65 || b[i] == 0xf0 || (b[i] & 0xf0) == 0x40))
		i++;
	return i;
}

/* Two-byte opcodes (0f xx) of SSE/SSE2/SSSE3 operations on xmm/mmx data. */
static int sse_opcode(uint8_t op)
{
	return (op >= 0x10 && op <= 0x17) || (op >= 0x28 && op <= 0x2f) ||
	       (op >= 0x50 && op <= 0x7f) || op == 0xc2 || (op >= 0xc4 && op <= 0xc6) ||
	       op >= 0xd0 || op == 0x38 || op == 0x3a;
}

void run_emulation_diagnosis(const uint8_t *b, size_t n, enum gm_status unread, char *msg,
			     size_t len)
{
	if (n == 0) {
		snprintf(msg, len, "KVM could not emulate the instruction there (%s)",
			 unread == GM_EFAULT ? "the guest executes outside its RAM: from MMIO "
					       "or an address no memory backs"
			 : unread == GM_EACCES ? "its bytes are in a page the guest has not shared"
					       : "its bytes could not be read");
		return;
	}
	char hex[3 * 8 + 1] = "";
	for (size_t i = 0, at = 0; i < n && i < 8; i++)
		at += (size_t)snprintf(hex + at, sizeof hex - at, "%s%02x", i ? " " : "", b[i]);
	size_t i = opcode_start(b, n);
	const char *what = NULL, *advice = "";
	if (i >= n) {
		what = "prefixes only";
	} else if (b[i] == 0xcc) {
		what = "int3";
		advice = ": guests must not use breakpoints here (use ud2 to trap)";
	} else if (b[i] == 0xcd) {
		what = "int n";
		advice = ": software interrupts are not emulated here";
	} else if (b[i] == 0xc4 || b[i] == 0xc5 || b[i] == 0x62) {
		what = "an AVX instruction";
		advice = ": build guests with -mgeneral-regs-only";
	} else if (b[i] == 0x0f && i + 1 < n) {
		uint8_t op = b[i + 1];
		if (op == 0x34 || op == 0x05 || op == 0x07 || op == 0x35) {
			what = op == 0x34 ? "sysenter" : op == 0x35 ? "sysexit"
			       : op == 0x05 ? "syscall" : "sysret";
			advice = ": cloak guests run in ring 0 and call the monitor with port I/O";
		} else if (sse_opcode(op)) {
			what = "an SSE instruction";
			advice = ": this host's KVM emulates guest code and has no SSE "
				 "arithmetic: build guests with -mgeneral-regs-only";
		}
	}
	if (what)
		snprintf(msg, len, "KVM could not emulate %s (bytes %s)%s", what, hex, advice);
	else
		snprintf(msg, len, "KVM could not emulate the instruction (bytes %s)", hex);
}

static const char *const vector_names[X86_VEC_COUNT] = {
	[X86_VEC_DE] = "#DE divide error", [X86_VEC_DB] = "#DB debug", [X86_VEC_NMI] = "NMI",
	[X86_VEC_BP] = "#BP breakpoint", [X86_VEC_OF] = "#OF overflow",
	[X86_VEC_BR] = "#BR bound range", [X86_VEC_UD] = "#UD invalid opcode",
	[X86_VEC_NM] = "#NM device not available", [X86_VEC_DF] = "#DF double fault",
	[X86_VEC_TS] = "#TS invalid TSS", [X86_VEC_NP] = "#NP segment not present",
	[X86_VEC_SS] = "#SS stack fault", [X86_VEC_GP] = "#GP general protection",
	[X86_VEC_PF] = "#PF page fault", [X86_VEC_MF] = "#MF x87 error",
	[X86_VEC_AC] = "#AC alignment check", [X86_VEC_MC] = "#MC machine check",
	[X86_VEC_XM] = "#XM SIMD error", [X86_VEC_VE] = "#VE virtualization",
	[X86_VEC_CP] = "#CP control protection",
};

void run_exception_diagnosis(const struct cloak_hc_abort *a, char *msg, size_t len)
{
	const char *name = a->vector < X86_VEC_COUNT && vector_names[a->vector]
				   ? vector_names[a->vector] : "reserved";
	if (a->vector != X86_VEC_PF) {
		snprintf(msg, len, "guest exception: vector %u (%s) error 0x%llx at rip 0x%llx",
			 a->vector, name, (unsigned long long)a->error_code,
			 (unsigned long long)a->rip);
		return;
	}
	/* A fault within a page of the stack pointer is the stack running
	 * into the guard page under it. A write fault at the instruction's
	 * own address is KVM patching vmcall/vmmcall in place, which
	 * read-only code refuses. */
	uint64_t d = a->cr2 > a->rsp ? a->cr2 - a->rsp : a->rsp - a->cr2;
	bool overflow = d <= CLOAK_PAGE_SIZE;
	bool patch = a->cr2 == a->rip && (a->error_code & X86_PF_WRITE);
	snprintf(msg, len, "guest exception: vector %u (%s) error 0x%llx at rip 0x%llx, address "
		 "0x%llx%s", a->vector, name, (unsigned long long)a->error_code,
		 (unsigned long long)a->rip, (unsigned long long)a->cr2,
		 overflow ? " (stack overflow: the fault is next to the stack pointer)"
		 : patch ? " (KVM tried to rewrite a vmcall/vmmcall in read-only code: guests "
			   "call the monitor with port I/O)" : "");
}
