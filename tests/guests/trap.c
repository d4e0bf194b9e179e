/* SPDX-License-Identifier: ISC */
/* Raises the CPU exception named by argv[1]; the runtime's IDT must catch
 * it and the monitor must report it (exit 255). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloak/guest.h"

static unsigned char data_code[16] = { 0xc3 }; /* ret */

/* Recurses until the stack runs into the guard page below it (the depth
 * limit is far beyond the runtime's 128 KiB stack). */
static __attribute__((noinline)) int deep(int n)
{
	volatile char pad[512];
	pad[0] = (char)n;
	if (n > 1000000)
		return pad[0];
	return deep(n + 1) + pad[0];
}

/* Makes the page holding p writable in our own page tables (ring 0 may),
 * so that KVM can patch a vmcall there: then a KVM that emulates guest
 * code wedges (the case the watchdog must end), and a KVM on VMX/SVM runs
 * the call and returns to the guest. */
static void make_writable(const void *p)
{
	uint64_t cr3, va = (uintptr_t)p;
	__asm__ volatile("mov %%cr3, %0" : "=r"(cr3));
	uint64_t *t = (uint64_t *)(uintptr_t)(cr3 & ~0xfffull);
	for (int level = 3; level >= 0; level--) {
		uint64_t *e = &t[(va >> (12 + 9 * level)) & 511];
		*e |= 2; /* W */
		if (level == 0 || (*e & 0x80))
			break;
		t = (uint64_t *)(uintptr_t)(*e & 0x000ffffffffff000ull);
	}
	__asm__ volatile("invlpg (%0)" : : "r"(p) : "memory");
}

/* A hypercall number KVM does not know: KVM on VMX/SVM answers it with
 * -KVM_ENOSYS (-1000) in rax and returns to the guest. */
#define UNKNOWN_HC 0x7c10a4ull
#define KVM_ENOSYS_RET ((uint64_t)-1000)

static __attribute__((noinline)) uint64_t do_vmcall(void)
{
	uint64_t rax = UNKNOWN_HC;
	__asm__ volatile("vmcall" : "+a"(rax) : : "memory");
	return rax;
}

static __attribute__((noinline)) uint64_t do_vmmcall(void)
{
	uint64_t rax = UNKNOWN_HC;
	__asm__ volatile("vmmcall" : "+a"(rax) : : "memory");
	return rax;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	volatile uint64_t zero = 0;
	if (!strcmp(what, "ud"))
		__asm__ volatile("ud2");
	if (!strcmp(what, "de")) {
		volatile uint64_t x = 1;
		x = x / zero;
	}
	if (!strcmp(what, "gp")) /* non-canonical address */
		(void)*(volatile uint64_t *)0x8000000000000000ull;
	if (!strcmp(what, "null"))
		(void)*(volatile uint64_t *)(uintptr_t)zero;
	if (!strcmp(what, "null-write"))
		*(volatile uint64_t *)(uintptr_t)(zero + 8) = 1;
	if (!strcmp(what, "beyond")) /* past the end of guest RAM: not mapped */
		(void)*(volatile uint64_t *)(uintptr_t)(cloak_boot_info()->mem_size + 4096);
	if (!strcmp(what, "spin"))
		for (;;)
			__asm__ volatile("" ::: "memory");
	/* A call that returns exits 4 if KVM answered it as an unknown
	 * hypercall, 5 if rax came back with anything else. */
	if (!strcmp(what, "vmcall")) /* in read-only code: KVM's patch faults */
		return do_vmcall() == KVM_ENOSYS_RET ? 4 : 5;
	if (!strcmp(what, "vmcall-writable")) {
		make_writable((const void *)(uintptr_t)do_vmcall);
		return do_vmcall() == KVM_ENOSYS_RET ? 4 : 5;
	}
	if (!strcmp(what, "vmmcall-writable")) {
		make_writable((const void *)(uintptr_t)do_vmmcall);
		return do_vmmcall() == KVM_ENOSYS_RET ? 4 : 5;
	}
	if (!strcmp(what, "triple")) { /* no IDT: the #UD becomes a triple fault */
		struct {
			uint16_t limit;
			uint64_t base;
		} __attribute__((packed)) none = { 0, 0 };
		__asm__ volatile("lidt %0; ud2" : : "m"(none));
	}
	if (!strcmp(what, "sse")) /* SSE arithmetic: not emulated on these hosts */
		__asm__ volatile("mulps %xmm0, %xmm0"); /* xmm0 is not ours to clobber under -mgeneral-regs-only; the guest never reaches the next line on an emulating host */
	if (!strcmp(what, "write-text")) /* code is read-only */
		*(volatile unsigned char *)(uintptr_t)&main = 0x90;
	if (!strcmp(what, "exec-data")) /* data is no-execute */
		((void (*)(void))(uintptr_t)data_code)();
	if (!strcmp(what, "exec-stack")) {
		unsigned char on_stack[16] = { 0xc3 };
		((void (*)(volatile unsigned char *))(uintptr_t)on_stack)(on_stack);
	}
	if (!strcmp(what, "write-rodata"))
		*(volatile char *)(uintptr_t)"a string literal" = 'A';
	if (!strcmp(what, "stack-overflow"))
		return deep(0);
	if (!strcmp(what, "abort"))
		cloak_abort_msg("the guest gave up");
	/* A message trying to rewrite the monitor's line: carriage return,
	 * backspace, escape, and CSI as a C1 control raw and in UTF-8. */
	if (!strcmp(what, "abort-controls"))
		cloak_abort_msg("spoof\rcloak: all fine\b\x1b[2K\x9b""2K\xc2\x9b""2K");
	/* Console output with terminal controls and UTF-8 text. */
	if (!strcmp(what, "print-controls")) {
		printf("A\x1b[31mB\x9b""31mC\xc2\x9b""31mD\rE\bF\x7fG caf\xc3\xa9 \xff\n");
		return 0;
	}
	/* One POLL with nothing to wait for, MS milliseconds. */
	if (!strcmp(what, "sleep") && argc > 2) {
		printf("sleeping\n");
		int r = cloak_poll((uint64_t)strtoul(argv[2], NULL, 0) * 1000000ull, 0, NULL);
		printf("slept: %d\n", r);
		return 0;
	}
	/* What CPUID tells the guest. */
	if (!strcmp(what, "cpuid")) {
		unsigned a, b, c, d;
		__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0), "c"(0));
		unsigned max = a;
		__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
		unsigned hv = c >> 31 & 1, vmx = c >> 5 & 1;
		unsigned aes = c >> 25 & 1, pclmul = c >> 1 & 1, avx = c >> 28 & 1, osxsave = c >> 27 & 1;
		__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000001u), "c"(0));
		unsigned svm = c >> 2 & 1, nx = d >> 20 & 1;
		__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x40000000u), "c"(0));
		printf("cpuid: max_basic=%u hypervisor=%u vmx=%u svm=%u nx=%u kvm_signature=%s aes=%u "
		       "pclmul=%u avx=%u osxsave=%u\n", max, hv, vmx, svm, nx, b == 0x4b4d564bu ? "yes" : "no",
		       aes, pclmul, avx, osxsave);
		return 0;
	}
	if (!strcmp(what, "int3"))
		__asm__ volatile("int3");
	if (!strcmp(what, "hlt"))
		__asm__ volatile("cli; hlt");
	return 3; /* unknown request */
}
