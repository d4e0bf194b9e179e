/* SPDX-License-Identifier: ISC */
/*
 * Block-device test guest. Modes (argv[1]):
 *   fill NAME SEED     write a pattern over the whole disk, flush
 *   verify NAME SEED   read the whole disk and check the pattern
 *   errors NAME        bad requests through raw calls: print each code
 *   stream NAME        endless sequential writes, "flushed N" after each flush
 *   info NAME          print capacity, sector size, flags
 *   write-at NAME KIB  one sector at KIB KiB, then a flush: the first error
 *   batch NAME SEED    through cloak_block_submit(): the pattern over the
 *                      first 100 sectors and a flush in one submission
 *                      (two calls), read back and checked; then a batch
 *                      whose middle request fails (statuses printed)
 * The pattern: byte k of sector s is (s * 131 + k * 7 + SEED) & 0xff, as
 * tests/integration/block.bats computes it on the host.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloak/block.h"
#include "cloak/guest.h"

#define SHARED __attribute__((section(".data.shared"), aligned(64)))
static struct cloak_hc_block_io raw SHARED;
static unsigned char buf[256 * 1024] __attribute__((aligned(4096)));

static void pattern(unsigned char *p, uint64_t first_sector, size_t sectors, size_t ssz,
		    unsigned seed)
{
	for (size_t s = 0; s < sectors; s++) {
		unsigned base = (unsigned)((first_sector + s) * 131 + seed);
		for (size_t k = 0; k < ssz; k++)
			p[s * ssz + k] = (unsigned char)(base + k * 7);
	}
}

static int fill_or_verify(const struct cloak_block *b, unsigned seed, int verify)
{
	size_t ssz = b->sector_size, per = sizeof buf / ssz;
	for (uint64_t off = 0; off < b->capacity; off += per * ssz) {
		size_t n = b->capacity - off < per * ssz ? b->capacity - off : per * ssz;
		if (!verify) {
			pattern(buf, off / ssz, n / ssz, ssz, seed);
			int r = cloak_block_write(b, off, buf, n);
			if (r)
				return printf("write at %llu failed: %d\n", (unsigned long long)off, r), 1;
			continue;
		}
		static unsigned char want[sizeof buf];
		int r = cloak_block_read(b, off, buf, n);
		if (r)
			return printf("read at %llu failed: %d\n", (unsigned long long)off, r), 1;
		pattern(want, off / ssz, n / ssz, ssz, seed);
		if (memcmp(buf, want, n))
			return printf("mismatch in [%llu, +%zu)\n", (unsigned long long)off, n), 1;
	}
	if (!verify && cloak_block_flush(b))
		return printf("flush failed\n"), 1;
	printf("%s %llu bytes\n", verify ? "verified" : "filled", (unsigned long long)b->capacity);
	return 0;
}

static long raw_io(uint64_t handle, uint64_t op, uint64_t off, uint64_t addr, uint64_t len)
{
	raw.handle = handle;
	raw.op = op;
	raw.offset = off;
	raw.buf = addr;
	raw.len = len;
	return (long)cloak_hypercall(CLOAK_HC_BLOCK_IO, &raw);
}

/* Each line: "case: code". The bats test compares with the expected codes. */
static int errors(const struct cloak_block *b)
{
	size_t bsz;
	unsigned char *bounce = cloak_bounce_area(&bsz);
	uint64_t h = b->handle, s = b->sector_size, cap = b->capacity;
	uint64_t ok = (uint64_t)(uintptr_t)bounce;
	printf("good: %ld\n", raw_io(h, CLOAK_BLOCK_READ, 0, ok, s));
	printf("bad-handle: %ld\n", raw_io(99, CLOAK_BLOCK_READ, 0, ok, s));
	printf("bad-op: %ld\n", raw_io(h, 7, 0, ok, s));
	printf("zero-len: %ld\n", raw_io(h, CLOAK_BLOCK_READ, 0, ok, 0));
	printf("odd-len: %ld\n", raw_io(h, CLOAK_BLOCK_READ, 0, ok, s + 1));
	printf("odd-offset: %ld\n", raw_io(h, CLOAK_BLOCK_READ, 1, ok, s));
	printf("past-end: %ld\n", raw_io(h, CLOAK_BLOCK_READ, cap, ok, s));
	printf("straddle-end: %ld\n", raw_io(h, CLOAK_BLOCK_READ, cap - s, ok, 2 * s));
	printf("wrap: %ld\n", raw_io(h, CLOAK_BLOCK_WRITE, UINT64_MAX - s + 1, ok, 2 * s));
	printf("too-big: %ld\n", raw_io(h, CLOAK_BLOCK_READ, 0, ok, CLOAK_BLOCK_IO_MAX + s));
	printf("buf-outside-ram: %ld\n", raw_io(h, CLOAK_BLOCK_READ, 0,
						cloak_boot_info()->mem_size - s / 2, s));
	printf("buf-wraps: %ld\n", raw_io(h, CLOAK_BLOCK_READ, 0, UINT64_MAX - 8, s));
	/* A private buffer (not shared): refused when protection is on. */
	printf("buf-private: %ld\n", raw_io(h, CLOAK_BLOCK_WRITE, 0,
					    (uint64_t)(uintptr_t)buf, s));
	/* Straddling the end of the bounce pool into private memory. */
	printf("buf-straddle: %ld\n", raw_io(h, CLOAK_BLOCK_WRITE, 0, ok + bsz - s / 2, s));
	printf("flush-with-len: %ld\n", raw_io(h, CLOAK_BLOCK_FLUSH, 0, 0, s));
	printf("flush: %ld\n", raw_io(h, CLOAK_BLOCK_FLUSH, 0, 0, 0));
	printf("write: %ld\n", raw_io(h, CLOAK_BLOCK_WRITE, 0, ok, s));
	return 0;
}

/* Writes sector after sector; sector i starts with "SEQ" and i. Every 8
 * sectors it flushes and then reports how many sectors are durable. */
static int stream(const struct cloak_block *b)
{
	uint64_t nsec = b->capacity / b->sector_size;
	memset(buf, 0xa5, b->sector_size * 8);
	for (uint64_t i = 0; i < nsec; i += 8) {
		for (uint64_t k = 0; k < 8; k++) {
			memcpy(buf + k * b->sector_size, "SEQ", 4);
			uint64_t v = i + k;
			memcpy(buf + k * b->sector_size + 8, &v, 8);
		}
		uint64_t n = nsec - i < 8 ? nsec - i : 8;
		if (cloak_block_write(b, i * b->sector_size, buf, n * b->sector_size) ||
		    cloak_block_flush(b))
			return printf("write/flush failed at sector %llu\n", (unsigned long long)i), 1;
		printf("flushed %llu\n", (unsigned long long)(i + n));
	}
	printf("stream done\n");
	return 0;
}

/* Data in the bounce pool (batched buffers are passed as they are). The
 * round trip's request array is private (the runtime copies it); the
 * partial failure's lies in the pool (used in place). */
static int batch(const struct cloak_block *b, unsigned seed)
{
	enum { N = 100 };
	static struct cloak_block_req r[N + 1];
	size_t bsz, ssz = b->sector_size;
	unsigned char *pool = cloak_bounce_area(&bsz);
	if (bsz < 2 * N * ssz + 4096 || b->capacity < N * ssz)
		return printf("pool or disk too small\n"), 2;
	unsigned char *out = pool + 4096, *in = out + N * ssz;
	pattern(out, 0, N, ssz, seed);
	for (unsigned i = 0; i < N; i++)
		r[i] = (struct cloak_block_req){ .op = CLOAK_BLOCK_WRITE, .offset = i * ssz,
						 .buf = (uintptr_t)(out + i * ssz), .len = ssz };
	r[N] = (struct cloak_block_req){ .op = CLOAK_BLOCK_FLUSH, .ret = 1 };
	int failed = cloak_block_submit(b, r, N + 1);
	if (failed || r[0].ret || r[N - 1].ret || r[N].ret)
		return printf("batch write: %d failed\n", failed), 1;
	memset(in, 0, N * ssz);
	for (unsigned i = 0; i < N; i++)
		r[i] = (struct cloak_block_req){ .op = CLOAK_BLOCK_READ, .offset = i * ssz,
						 .buf = (uintptr_t)(in + i * ssz), .len = ssz, .ret = 1 };
	failed = cloak_block_submit(b, r, N);
	if (failed || memcmp(in, out, N * ssz))
		return printf("batch read back: %d failed or mismatch\n", failed), 1;
	printf("batch round trip %d sectors\n", N);
	/* A partial failure: the requests around a refused one still run. */
	struct cloak_block_req *q = (struct cloak_block_req *)pool;
	memset(out, 'A', ssz);
	memset(out + ssz, 'B', ssz);
	q[0] = (struct cloak_block_req){ .op = CLOAK_BLOCK_WRITE, .offset = 0,
					 .buf = (uintptr_t)out, .len = ssz };
	q[1] = (struct cloak_block_req){ .op = CLOAK_BLOCK_WRITE, .offset = b->capacity,
					 .buf = (uintptr_t)out, .len = ssz };
	q[2] = (struct cloak_block_req){ .op = CLOAK_BLOCK_WRITE, .offset = ssz,
					 .buf = (uintptr_t)(out + ssz), .len = ssz };
	q[3] = (struct cloak_block_req){ .op = CLOAK_BLOCK_FLUSH };
	for (unsigned i = 0; i < 4; i++)
		q[i].ret = 99; /* each status must be written, 0 included */
	failed = cloak_block_submit(b, q, 4);
	printf("partial: %d failed; statuses %lld %lld %lld %lld\n", failed, (long long)q[0].ret,
	       (long long)q[1].ret, (long long)q[2].ret, (long long)q[3].ret);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return printf("usage: block_io MODE NAME [SEED]\n"), 2;
	struct cloak_block b;
	int r = cloak_block_open(argv[2], &b);
	if (r)
		return printf("open %s: %d\n", argv[2], r), 3;
	unsigned seed = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 0) : 0;
	if (!strcmp(argv[1], "fill"))
		return fill_or_verify(&b, seed, 0);
	if (!strcmp(argv[1], "verify"))
		return fill_or_verify(&b, seed, 1);
	if (!strcmp(argv[1], "errors"))
		return errors(&b);
	if (!strcmp(argv[1], "batch"))
		return batch(&b, seed);
	if (!strcmp(argv[1], "stream"))
		return stream(&b);
	if (!strcmp(argv[1], "write-at")) { /* one sector at byte offset SEED */
		static unsigned char sector[4096];
		memset(sector, 0x5a, sizeof sector);
		int w = cloak_block_write(&b, seed * 1024ull, sector, b.sector_size);
		/* A write may be queued (cloak/block.h): its host error comes
		 * with the flush, as a program that wants to know asks for it. */
		if (!w)
			w = cloak_block_flush(&b);
		printf("write at %llu KiB: %d\n", (unsigned long long)seed, w);
		return w ? 1 : 0;
	}
	if (!strcmp(argv[1], "info"))
		return printf("capacity %llu sector %llu flags %llu handle %llu\n",
			      (unsigned long long)b.capacity, (unsigned long long)b.sector_size,
			      (unsigned long long)b.flags, (unsigned long long)b.handle), 0;
	return printf("unknown mode %s\n", argv[1]), 2;
}
