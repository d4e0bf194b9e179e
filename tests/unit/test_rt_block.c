/* SPDX-License-Identifier: ISC */
/*
 * The runtime's block API and its cache (runtime/block.c, block_cache.c),
 * on the host: the test plays the monitor (cloak_rt_test_call) over a
 * 1 MiB image in memory, counts the calls and checks what the cache
 * promises (cloak/block.h): sequential writes go out as few calls, every
 * write is in the image once the device is flushed or the guest exits, a
 * read sees every write before it, sequential reads are read ahead, a
 * queued write's host error reaches the next write or flush once.
 */
#include "rt_libc_test.h"

#include "../../runtime/include/cloak/block.h"
#include "../../runtime/rt.h"

#define IMG (1u << 20)
#define SECTOR 4096u
#define CACHE (64u * 4096u)

/* What the runtime's other files define (protect.c, exit.c). */
unsigned char *rt_bounce;
size_t rt_bounce_size;
uint64_t rt_protection;
struct cloak_rt_io_window cloak_rt_io = { 0, UINTPTR_MAX, CLOAK_BLOCK_IO_MAX };
unsigned char *cloak_rt_block_cache;
size_t cloak_rt_block_cache_size;
void (*rt_exit_drain)(void);

/* The runtime's assertion failure (its malloc is linked, unused here). */
_Noreturn void rt_cloak_assert_fail(const char *expr, const char *file, int line);
_Noreturn void rt_cloak_assert_fail(const char *expr, const char *file, int line)
{
	fail_msg("runtime assertion: %s (%s:%d)", expr, file, line);
	abort();
}

static unsigned char image[2][IMG];
static unsigned char bounce[64 * 4096], cache_area[CACHE];
static struct {
	unsigned calls, batches, flushes, writes, reads;
	int fail_writes; /* the host's writes fail with EIO */
} host;

/* The monitor, as far as the block calls go. */
int64_t cloak_rt_test_call(unsigned nr, void *block)
{
	host.calls++;
	if (nr == CLOAK_HC_BLOCK_IO) {
		struct cloak_hc_block_io *a = block;
		if (a->op == CLOAK_BLOCK_FLUSH) {
			host.flushes++;
			a->ret = 0;
		} else if (a->op == CLOAK_BLOCK_READ) {
			host.reads++;
			memcpy((void *)(uintptr_t)a->buf, image[a->handle] + a->offset, a->len);
			a->ret = 0;
		} else {
			host.writes++;
			if (!host.fail_writes)
				memcpy(image[a->handle] + a->offset, (void *)(uintptr_t)a->buf, a->len);
			a->ret = host.fail_writes ? -CLOAK_EIO : 0;
		}
		return a->ret;
	}
	if (nr == CLOAK_HC_BLOCK_BATCH) {
		struct cloak_hc_block_batch *a = block;
		struct cloak_block_req *r = (struct cloak_block_req *)(uintptr_t)a->reqs;
		host.batches++;
		a->ret = 0;
		for (uint64_t i = 0; i < a->count; i++) {
			if (r[i].op == CLOAK_BLOCK_FLUSH) {
				host.flushes++;
				r[i].ret = 0;
			} else if (r[i].op == CLOAK_BLOCK_WRITE) {
				host.writes++;
				if (!host.fail_writes)
					memcpy(image[a->handle] + r[i].offset,
					       (void *)(uintptr_t)r[i].buf, r[i].len);
				r[i].ret = host.fail_writes ? -CLOAK_EIO : 0;
			} else {
				host.reads++;
				memcpy((void *)(uintptr_t)r[i].buf, image[a->handle] + r[i].offset,
				       r[i].len);
				r[i].ret = 0;
			}
			a->ret += r[i].ret != 0;
		}
		return a->ret;
	}
	fail_msg("unexpected call %u", nr);
	return 0;
}

static struct cloak_block dev[2];
static struct cloak_hc_block_io rt_calls[2][2];

static int setup(void **state)
{
	(void)state;
	memset(image, 0, sizeof image);
	memset(&host, 0, sizeof host);
	rt_bounce = bounce;
	rt_bounce_size = sizeof bounce;
	cloak_rt_block_cache = cache_area;
	cloak_rt_block_cache_size = sizeof cache_area;
	for (unsigned h = 0; h < 2; h++) {
		dev[h] = (struct cloak_block){ .handle = h, .capacity = IMG, .sector_size = SECTOR };
		for (unsigned op = 0; op < 2; op++) {
			rt_calls[h][op] = (struct cloak_hc_block_io){ .handle = h, .op = op };
			dev[h].rt_call[op] = &rt_calls[h][op];
		}
	}
	return 0;
}

/* Ends the test as the guest's exit would: nothing queued stays behind. */
static int teardown(void **state)
{
	(void)state;
	if (rt_exit_drain)
		rt_exit_drain();
	return 0;
}

static void fill(unsigned char *p, unsigned seed)
{
	for (unsigned i = 0; i < SECTOR; i++)
		p[i] = (unsigned char)(seed * 31 + i);
}

static void test_sequential_writes_are_few_calls(void **state)
{
	unsigned char s[SECTOR];
	for (unsigned i = 0; i < 64; i++) {
		fill(s, i);
		assert_int_equal(cloak_block_write(&dev[0], (uint64_t)i * SECTOR, s, SECTOR), 0);
	}
	/* Queued, not yet on the host: one cache's worth, no call. */
	assert_int_equal(host.calls, 0);
	assert_int_equal(cloak_block_flush(&dev[0]), 0);
	/* One batch: the 64 writes as one, and the flush. */
	assert_int_equal(host.calls, 1);
	assert_int_equal(host.writes, 1);
	assert_int_equal(host.flushes, 1);
	for (unsigned i = 0; i < 64; i++) {
		fill(s, i);
		assert_memory_equal(image[0] + i * SECTOR, s, SECTOR);
	}
}

static void test_exit_sends_what_is_queued(void **state)
{
	unsigned char s[SECTOR];
	fill(s, 5);
	assert_int_equal(cloak_block_write(&dev[0], 3 * SECTOR, s, SECTOR), 0);
	assert_int_equal(host.writes, 0);
	assert_non_null(rt_exit_drain);
	rt_exit_drain();
	assert_int_equal(host.writes, 1);
	assert_memory_equal(image[0] + 3 * SECTOR, s, SECTOR);
}

static void test_read_sees_earlier_writes(void **state)
{
	unsigned char s[SECTOR], back[SECTOR];
	fill(s, 9);
	assert_int_equal(cloak_block_write(&dev[0], 7 * SECTOR, s, SECTOR), 0);
	assert_int_equal(cloak_block_read(&dev[0], 7 * SECTOR, back, SECTOR), 0);
	assert_memory_equal(back, s, SECTOR);
	assert_memory_equal(image[0] + 7 * SECTOR, s, SECTOR);
}

static void test_sequential_reads_read_ahead(void **state)
{
	for (unsigned i = 0; i < IMG / SECTOR; i++)
		fill(image[0] + i * SECTOR, 100 + i);
	unsigned char back[SECTOR], want[SECTOR];
	for (unsigned i = 0; i < 128; i++) {
		assert_int_equal(cloak_block_read(&dev[0], (uint64_t)i * SECTOR, back, SECTOR), 0);
		fill(want, 100 + i);
		assert_memory_equal(back, want, SECTOR);
	}
	/* The first read alone, then one cache's worth at a time. */
	assert_in_range(host.reads, 2, 4);
	/* Reads out of order are not read ahead. */
	host.reads = 0;
	for (unsigned i = 0; i < 8; i++)
		assert_int_equal(cloak_block_read(&dev[1], (uint64_t)(200 - 9 * i) * SECTOR, back,
						     SECTOR), 0);
	assert_int_equal(host.reads, 8);
}

static void test_write_into_read_ahead_is_seen(void **state)
{
	unsigned char back[SECTOR], s[SECTOR];
	assert_int_equal(cloak_block_read(&dev[0], 0, back, SECTOR), 0);
	assert_int_equal(cloak_block_read(&dev[0], SECTOR, back, SECTOR), 0); /* reads ahead */
	fill(s, 77);
	assert_int_equal(cloak_block_write(&dev[0], 2 * SECTOR, s, SECTOR), 0);
	assert_int_equal(cloak_block_read(&dev[0], 2 * SECTOR, back, SECTOR), 0);
	assert_memory_equal(back, s, SECTOR);
}

static void test_a_host_error_reaches_the_next_write_or_flush_once(void **state)
{
	unsigned char s[SECTOR];
	fill(s, 1);
	host.fail_writes = 1;
	assert_int_equal(cloak_block_write(&dev[0], 0, s, SECTOR), 0); /* queued */
	assert_int_equal(cloak_block_flush(&dev[0]), -CLOAK_EIO);
	host.fail_writes = 0;
	assert_int_equal(cloak_block_flush(&dev[0]), 0); /* told once */
	/* Sent because another device wanted the cache: the error waits for
	 * the first device's next write. */
	host.fail_writes = 1;
	assert_int_equal(cloak_block_write(&dev[0], 0, s, SECTOR), 0);
	assert_int_equal(cloak_block_write(&dev[1], 0, s, SECTOR), 0);
	host.fail_writes = 0;
	assert_int_equal(cloak_block_write(&dev[0], 0, s, SECTOR), -CLOAK_EIO);
	assert_int_equal(cloak_block_write(&dev[0], 0, s, SECTOR), 0);
}

static void test_two_devices_keep_their_own_data(void **state)
{
	unsigned char a[SECTOR], b[SECTOR];
	fill(a, 3);
	fill(b, 4);
	assert_int_equal(cloak_block_write(&dev[0], 0, a, SECTOR), 0);
	assert_int_equal(cloak_block_write(&dev[1], 0, b, SECTOR), 0);
	assert_int_equal(cloak_block_flush(&dev[1]), 0);
	assert_int_equal(cloak_block_flush(&dev[0]), 0);
	assert_memory_equal(image[0], a, SECTOR);
	assert_memory_equal(image[1], b, SECTOR);
}

static void test_bad_requests_fail_before_anything_is_queued(void **state)
{
	unsigned char s[SECTOR] = { 0 };
	assert_int_equal(cloak_block_write(&dev[0], 1, s, SECTOR), -CLOAK_EINVAL);
	assert_int_equal(cloak_block_write(&dev[0], IMG, s, SECTOR), -CLOAK_ERANGE);
	struct cloak_block ro = dev[0];
	ro.flags = CLOAK_BLOCK_RO;
	assert_int_equal(cloak_block_write(&ro, 0, s, SECTOR), -CLOAK_EROFS);
	assert_int_equal(cloak_block_flush(&dev[0]), 0);
	assert_int_equal(host.writes, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(test_sequential_writes_are_few_calls),
		T(test_exit_sends_what_is_queued),
		T(test_read_sees_earlier_writes),
		T(test_sequential_reads_read_ahead),
		T(test_write_into_read_ahead_is_seen),
		T(test_a_host_error_reaches_the_next_write_or_flush_once),
		T(test_two_devices_keep_their_own_data),
		T(test_bad_requests_fail_before_anything_is_queued),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
