/* SPDX-License-Identifier: ISC */
/*
 * libFuzzer target: the hypercall dispatcher over the checked-access
 * module. Each input is a run of calls a hostile guest could make: the
 * fuzzer plays the guest, writing an argument block anywhere in its 64-page
 * memory (private pages too, as a guest can) and then "executing" an outl
 * with a port, access size and value of its choosing. The monitor side is
 * the real code: runner_call() on a runner with no KVM (fds -1) whose
 * device calls are answered in the same process (as with
 * --no-device-isolation), so both processes' decoders are fuzzed, over
 * memory from gm_create(), with the real device layer attached once: a
 * 64 KiB block device with 512-byte sectors ("d") and a listening channel
 * no peer connects to ("c"), so that BLOCK_INFO/BLOCK_IO validation and
 * transfers and the channel calls are fuzzed too. Besides crashes and ASan/UBSan
 * reports it checks what the protection promises, after every call:
 *  - a page that was private before the call, or is private after it,
 *    holds exactly the bytes it held before (the monitor wrote nothing
 *    there: no partial copy, no reply into a page unshared by the call);
 *  - console output is exactly the guest bytes asked for, and with
 *    protection on they all come from shared pages.
 * The memory is a plain memfd (GM_BACKEND_SHARED) instead of anonymous
 * memory only so the fuzzer can map it a second time as the guest's view;
 * the checked-access code is the same for every backend.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cloak/abi.h"
#include "cli/options.h"
#include "device/device.h"
#include "mem/guestmem.h"
#include "mem/inspect.h"
#include "runner/runner.h"

#define NPAGES 64u
#define MEM (NPAGES * CLOAK_PAGE_SIZE)
#define BODY 64u /* the largest block, CHAN_XFER's */
#define MAX_OPS 24

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

struct op {
	uint8_t nr;     /* port = CLOAK_HC_PORT_BASE - 4 + nr % 40: outside too */
	uint8_t flags;  /* 0x80: access size flags&7; 0x40: raw value; 0x20:
			 * unaligned; 0x10: fold the block's fields into memory */
	uint8_t sel[4]; /* value, or page and offset of the block */
	uint8_t body[BODY];
};

static int console_fd = -1;
static struct devices *devices; /* set up once, shared by every input */
static unsigned char snapshot[MEM];

static void die(const char *what)
{
	/* fd 2 directly: stdout is the captured console, stderr silenced. */
	dprintf(STDERR_FILENO, "fuzz_hypercall: %s\n", what);
	abort();
}

int LLVMFuzzerInitialize(int *argc, char **argv[])
{
	/* Console calls write(1): capture them. outcome_fail's "cloak: ..." lines go
	 * through the stderr FILE: silence it (libFuzzer kept its own copy of
	 * the pointer, and sanitizer reports write fd 2 directly). */
	console_fd = memfd_create("console", MFD_CLOEXEC);
	if (console_fd < 0 || dup2(console_fd, STDOUT_FILENO) < 0)
		abort();
	FILE *null = fopen("/dev/null", "w");
	if (null)
		stderr = null;

	/* The devices, through the same option parsing and set-up as the
	 * monitor. The image and socket names are unlinked once open. */
	char img[] = "/tmp/cloak-fuzz-XXXXXX", blk[64], chan[64];
	int ifd = mkstemp(img);
	if (ifd < 0 || ftruncate(ifd, 64 << 10) != 0)
		abort();
	close(ifd);
	snprintf(blk, sizeof blk, "d=%s,sector=512", img);
	snprintf(chan, sizeof chan, "c=listen:/tmp/cloak-fuzz-%d.sock", (int)getpid());
	struct options o;
	memset(&o, 0, sizeof o);
	o.block[o.nblock++] = blk;
	o.channel[o.nchannel++] = chan;
	struct fail f = { 0 };
	if (devices_setup(&devices, &o, &f) != 0) {
		dprintf(STDERR_FILENO, "fuzz_hypercall: devices: %s\n", f.msg);
		abort();
	}
	unlink(img);
	unlink(chan + strlen("c=listen:"));
	return 0;
}

/* Empties the captured console; fd 1 shares the file offset, so rewind. */
static void reset_console(void)
{
	if (ftruncate(console_fd, 0) || lseek(console_fd, 0, SEEK_SET) != 0)
		abort();
}

static uint64_t fold(uint64_t v)
{
	return v % (MEM + 2 * CLOAK_PAGE_SIZE);
}

/* Where the guest puts the block and what it passes in the outl. */
static uint32_t block_value(const struct op *o)
{
	uint32_t sel;
	memcpy(&sel, o->sel, 4);
	if (o->flags & 0x40)
		return sel;
	uint32_t page = (sel & 0xffff) % (NPAGES + 2);
	uint32_t off = (sel >> 16) % CLOAK_PAGE_SIZE;
	if (!(o->flags & 0x20))
		off &= ~7u;
	return page * (uint32_t)CLOAK_PAGE_SIZE + off;
}

/* The guest writes its argument block (it can write any of its pages). */
static void guest_write_block(unsigned char *view, const struct op *o, uint32_t value)
{
	unsigned char body[BODY];
	memcpy(body, o->body, BODY);
	if (o->flags & 0x10)
		for (size_t f = 8; f + 8 <= BODY; f += 8) {
			uint64_t v;
			memcpy(&v, body + f, 8);
			v = fold(v);
			memcpy(body + f, &v, 8);
		}
	if ((uint8_t)(o->nr % 40) == CLOAK_HC_POLL + 4) {
		uint64_t t; /* POLL sleeps: keep it to a microsecond */
		memcpy(&t, body + 8, 8);
		t %= 1000;
		memcpy(body + 8, &t, 8);
	}
	if ((uint8_t)(o->nr % 40) == CLOAK_HC_CHAN_XFER + 4) {
		uint64_t t; /* CHAN_XFER waits as POLL does: the same bound */
		memcpy(&t, body + 16, 8);
		t %= 1000;
		memcpy(body + 16, &t, 8);
	}
	if (value < MEM) {
		size_t n = MEM - value < BODY ? MEM - value : BODY;
		memcpy(view + value, body, n);
	}
}

static bool page_private(struct guestmem *gm, unsigned p)
{
	return gm_protected(gm) && !gm_is_shared(gm, gpa((uint64_t)p * CLOAK_PAGE_SIZE),
						 CLOAK_PAGE_SIZE);
}

/* `before` is guest memory as it was when the call was made: the console
 * buffer may overlap the argument block, whose reply changes it after. */
static void check_console(struct guestmem *gm, const unsigned char *before, unsigned port,
			  uint32_t value, bool protected_before)
{
	static unsigned char out[CLOAK_CONSOLE_MAX + 1];
	off_t n = lseek(console_fd, 0, SEEK_END);
	if (n <= 0)
		return;
	if (n > (off_t)CLOAK_CONSOLE_MAX || pread(console_fd, out, (size_t)n, 0) != n)
		die("console printed more than one call may");
	if (port != CLOAK_HC_PORT_BASE + CLOAK_HC_CONSOLE || value % 8 || value + 24 > MEM)
		die("console output from a call that is not a console write");
	struct cloak_hc_console a;
	memcpy(&a, before + value, sizeof a);
	if (a.buf > MEM || a.len != (uint64_t)n || a.buf + a.len > MEM ||
	    memcmp(out, before + a.buf, (size_t)n))
		die("console output differs from the guest bytes asked for");
	if (protected_before && !gm_is_shared(gm, gpa(a.buf), a.len))
		die("console printed bytes of a private page");
	reset_console();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fail f = { 0 };
	struct runner r;
	struct device dev;
	memset(&r, 0, sizeof r);
	memset(&dev, 0, sizeof dev);
	r.kvm.kvm_fd = r.kvm.vm_fd = r.vcpu.fd = -1;
	dev.dump_fd = -1;
	dev.dev = devices;
	r.local = &dev;
	r.gm = dev.gm = gm_create(GM_BACKEND_SHARED, MEM, -1, &f);
	if (!r.gm)
		die(f.msg);
	int fd = gm_inspect_dup_fd(r.gm);
	unsigned char *view = fd >= 0 ? mmap(NULL, MEM, PROT_READ | PROT_WRITE, MAP_SHARED,
					      fd, 0) : MAP_FAILED;
	if (view == MAP_FAILED)
		die("cannot map the guest's view of its memory");
	close(fd);
	reset_console();

	size_t nops = size / sizeof(struct op);
	if (nops > MAX_OPS)
		nops = MAX_OPS;
	for (size_t i = 0; i < nops && !r.out.stopped && !dev.out.stopped; i++) {
		struct op o;
		memcpy(&o, data + i * sizeof o, sizeof o);
		unsigned port = CLOAK_HC_PORT_BASE - 4 + o.nr % 40;
		unsigned width = o.flags & 0x80 ? o.flags & 7 : 4;
		uint32_t value = block_value(&o);
		guest_write_block(view, &o, value);

		bool was_private[NPAGES], protected_before = gm_protected(r.gm);
		for (unsigned p = 0; p < NPAGES; p++)
			was_private[p] = page_private(r.gm, p);
		memcpy(snapshot, view, MEM);
		runner_call(&r, (uint16_t)port, width, value);
		for (unsigned p = 0; p < NPAGES; p++) {
			size_t off = (size_t)p * CLOAK_PAGE_SIZE;
			if ((was_private[p] || page_private(r.gm, p)) &&
			    memcmp(snapshot + off, view + off, CLOAK_PAGE_SIZE))
				die("the monitor wrote into a private page");
		}
		check_console(r.gm, snapshot, port, value, protected_before);
		if (gm_shared_pages(r.gm) > NPAGES)
			die("more pages shared than exist");
	}
	munmap(view, MEM);
	gm_destroy(r.gm);
	return 0;
}
