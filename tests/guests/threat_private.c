/* SPDX-License-Identifier: ISC */
/*
 * Threat test 3 (docs/threat-model.md): a guest keeps a secret in private
 * memory and then hands private addresses to every call that reads or
 * writes guest memory, as a compromised or careless guest component might
 * to make the monitor leak it. Each attempt prints "NAME ret=N"; the
 * monitor must refuse all of them (-3, EACCES), and the secret must appear
 * in no output, image, socket or dump.
 *
 *   threat_private.elf TOKEN [abort|share]
 *
 * The secret is "CLOAK-PRIVATE-" + TOKEN reversed, built at run time.
 * Expects --block=disk=... and --channel=c=listen:... (block/channel
 * attempts print ret=-5, ENOENT, without them). Controls: the same block
 * write from a shared page succeeds (the image then holds
 * "SHARED-CONTROL"), so the test can see data that does get out.
 * With "abort", the last call is ABORT with its message in the private page.
 * With "share", the guest finally shares the secret's page itself, so
 * --dump-shared must then show it (a control for the dump check).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cloak/guest.h"

static char secret_page[4096] __attribute__((aligned(4096)));

static union {
	struct cloak_hc_console con;
	struct cloak_hc_random rnd;
	struct cloak_hc_block_info info;
	struct cloak_hc_block_io bio;
	struct cloak_hc_chan_open copen;
	struct cloak_hc_chan_io cio;
	struct cloak_hc_abort ab;
} blk __attribute__((section(".data.shared"), aligned(4096)));

static void build_secret(char *out, const char *token)
{
	size_t n = strlen(token) > 100 ? 100 : strlen(token);
	strcpy(out, "CLOAK-PRIVATE-");
	char *p = out + strlen(out);
	for (size_t i = 0; i < n; i++)
		*p++ = token[n - 1 - i];
	*p = 0;
}

static void report(const char *name, int64_t ret)
{
	printf("%s ret=%lld\n", name, (long long)ret);
}

static int64_t block_io(uint64_t handle, uint64_t op, void *buf, uint64_t len)
{
	memset(&blk, 0, sizeof blk.bio);
	blk.bio.handle = handle;
	blk.bio.op = op;
	blk.bio.offset = 0;
	blk.bio.buf = (uintptr_t)buf;
	blk.bio.len = len;
	return cloak_hypercall(CLOAK_HC_BLOCK_IO, &blk.bio);
}

static int64_t chan_io(uint64_t handle, uint64_t op, void *buf, uint64_t len)
{
	memset(&blk, 0, sizeof blk.cio);
	blk.cio.handle = handle;
	blk.cio.op = op;
	blk.cio.buf = (uintptr_t)buf;
	blk.cio.len = len;
	return cloak_hypercall(CLOAK_HC_CHAN_IO, &blk.cio);
}

/* Protection comes on in main, after the "share" control has shared the
 * secret's page: where the monitor gives memory up the shared window is
 * fixed at PROTECT (docs/abi.md). */
const int cloak_config_protect = 0;
static char shared_copy[4096] __attribute__((aligned(4096)));

int main(int argc, char **argv)
{
	if (argc < 2) {
		printf("usage: threat_private.elf TOKEN [abort|share|unshare]\n");
		return 2;
	}
	/* The control: a copy of the secret in a page shared before
	 * protection, which the dump of shared pages must show. */
	bool share_it = argc > 2 && !strcmp(argv[2], "share");
	/* "unshare": a page shared before protection and unshared after it
	 * is private again: the secret goes there too, so no process of the
	 * host may still map it (runner/device_maps.h). */
	bool unshare_it = argc > 2 && !strcmp(argv[2], "unshare");
	int64_t shared = share_it || unshare_it ? cloak_share(shared_copy, 1) : 0;
	if (cloak_protect() != 0)
		cloak_abort_msg("protection refused");
	if (unshare_it) {
		report("unshare", cloak_unshare(shared_copy, 1));
		build_secret(shared_copy, argv[1]);
	}
	build_secret(secret_page, argv[1]);
	if (share_it)
		build_secret(shared_copy, argv[1]);
	uint64_t slen = strlen(secret_page);
	printf("protection 0x%llx\n", (unsigned long long)cloak_protection());

	memset(&blk, 0, sizeof blk.con);
	blk.con.buf = (uintptr_t)secret_page;
	blk.con.len = slen;
	report("console_private", cloak_hypercall(CLOAK_HC_CONSOLE, &blk.con));

	memset(&blk, 0, sizeof blk.rnd);
	blk.rnd.buf = (uintptr_t)secret_page;
	blk.rnd.len = 16;
	report("random_into_private", cloak_hypercall(CLOAK_HC_RANDOM, &blk.rnd));

	memset(&blk, 0, sizeof blk.info);
	strcpy(blk.info.name, "disk");
	int64_t r = cloak_hypercall(CLOAK_HC_BLOCK_INFO, &blk.info);
	uint64_t disk = blk.info.handle;
	report("block_info", r);
	report("block_write_from_private", block_io(disk, CLOAK_BLOCK_WRITE, secret_page, 512));
	report("block_read_into_private", block_io(disk, CLOAK_BLOCK_READ, secret_page, 512));
	size_t bsz;
	char *bounce = cloak_bounce_area(&bsz);
	memset(bounce, 0, 512);
	strcpy(bounce, "SHARED-CONTROL");
	report("block_write_from_shared", block_io(disk, CLOAK_BLOCK_WRITE, bounce, 512));

	memset(&blk, 0, sizeof blk.copen);
	strcpy(blk.copen.name, "c");
	r = cloak_hypercall(CLOAK_HC_CHAN_OPEN, &blk.copen);
	uint64_t chan = blk.copen.handle;
	report("chan_open", r);
	report("chan_write_from_private", chan_io(chan, CLOAK_CHAN_WRITE, secret_page, slen));
	report("chan_read_into_private", chan_io(chan, CLOAK_CHAN_READ, secret_page, 64));

	char expect[160];
	build_secret(expect, argv[1]);
	bool same = !strcmp(expect, secret_page);
	printf("secret %s\n", same ? "intact" : "changed");
	if (argc > 2 && !strcmp(argv[2], "abort")) {
		memset(&blk, 0, sizeof blk.ab);
		blk.ab.msg = (uintptr_t)secret_page;
		blk.ab.msg_len = slen;
		blk.ab.vector = CLOAK_ABORT_NO_VECTOR;
		cloak_hypercall(CLOAK_HC_ABORT, &blk.ab);
		printf("abort returned\n");
	}
	if (share_it)
		report("share_secret_page", shared);
	return same ? 0 : 1;
}
