/* SPDX-License-Identifier: ISC */
/* The guest's calls: which process answers each, and the argument block's
 * one copy in and out; see calls.h. */
#include "calls.h"

#include <string.h>

struct call_def {
	const char *name;
	size_t size;
};

#define CALL_ENTRY_(nr, NAME, name, type)                                          \
	[nr] = { #name, sizeof(type) },
static const struct call_def call_defs[CLOAK_HC_MAX] = { CLOAK_HC_CALLS(CALL_ENTRY_) };
#undef CALL_ENTRY_

#define CALL_CHECK_(nr, NAME, name, type)                                          \
	_Static_assert(sizeof(type) <= CALL_ARG_MAX && sizeof(type) % 8 == 0 &&    \
			       (nr) < CLOAK_HC_MAX,                                \
		       #name ": argument block size or call number");
CLOAK_HC_CALLS(CALL_CHECK_)
#undef CALL_CHECK_

/* Every call is on exactly one side: the two lists together are as long
 * as the ABI's, and a call on both would be a duplicate case below. */
#define COUNT4_(a, b, c, d) +1
#define COUNT2_(a, b) +1
_Static_assert(0 CLOAK_HC_CALLS(COUNT4_) == 0 CLOAK_RUNNER_CALLS(COUNT2_)
		       CLOAK_DEVICE_CALLS(COUNT2_),
	       "every call in cloak/abi.h is the runner's or the device process's");
#undef COUNT4_
#undef COUNT2_

enum call_side call_side(uint16_t port, unsigned size, unsigned *nr)
{
	if (port < CLOAK_HC_PORT_BASE || port >= CLOAK_HC_PORT_BASE + CLOAK_HC_MAX || size != 4)
		return CALL_NONE;
	*nr = port - CLOAK_HC_PORT_BASE;
	switch (*nr) {
#define SIDE_(NAME, name) case CLOAK_HC_##NAME:
	CLOAK_RUNNER_CALLS(SIDE_)
		return CALL_RUNNER;
	CLOAK_DEVICE_CALLS(SIDE_)
		return CALL_DEVICE;
#undef SIDE_
	default:
		return CALL_UNKNOWN;
	}
}

int call_refuse(struct outcome *o, uint16_t port, unsigned size)
{
	if (port < CLOAK_HC_PORT_BASE || port >= CLOAK_HC_PORT_BASE + CLOAK_HC_MAX)
		return outcome_fail(o, CLOAK_EXIT_VIOLATION,
				    "guest wrote to unknown I/O port 0x%x: cloak's calls use "
				    "ports 0x%x-0x%x", port, CLOAK_HC_PORT_BASE,
				    CLOAK_HC_PORT_BASE + CLOAK_HC_MAX - 1);
	return outcome_fail(o, CLOAK_EXIT_VIOLATION,
			    "guest call on port 0x%x used a %u-byte access: calls are 4-byte "
			    "outl", port, size);
}

int call_unknown(struct guestmem *gm, struct outcome *o, struct call_counts *n, unsigned nr,
		 uint32_t value)
{
	/* A newer guest may probe for a call this monitor lacks: answer
	 * ENOSYS if the block's ret field is reachable. */
	int64_t ret = -CLOAK_ENOSYS;
	n->calls[nr]++;
	n->refused++;
	if (value % 8 == 0 && gm_copy_to(gm, gpa(value), &ret, sizeof ret) == GM_OK)
		return 0;
	return outcome_fail(o, CLOAK_EXIT_VIOLATION,
			    "guest made unknown call %u with an unusable argument block at "
			    "0x%llx", nr, (unsigned long long)value);
}

int call_decode(struct guestmem *gm, struct outcome *o, struct call_counts *n, unsigned nr,
		uint32_t value, struct call *c)
{
	const struct call_def *def = &call_defs[nr];
	if (n)
		n->calls[nr]++;
	c->nr = nr;
	c->name = def->name;
	c->block = value;
	c->size = def->size;
	if (c->block % 8)
		return outcome_fail(o, CLOAK_EXIT_VIOLATION,
				    "%s: argument block at 0x%llx is not 8-byte aligned", c->name,
				    (unsigned long long)c->block);
	enum gm_status s = gm_copy_from(gm, c->args, gpa(c->block), c->size);
	if (s != GM_OK)
		return outcome_fail(o, CLOAK_EXIT_VIOLATION,
				    "%s: argument block [0x%llx, +%zu) is %s", c->name,
				    (unsigned long long)c->block, c->size,
				    s == GM_EACCES ? "in a page the guest has not shared"
						   : "outside guest memory");
	return 0;
}

void call_encode(struct guestmem *gm, const struct outcome *o, struct call_counts *n,
		 const struct call *c)
{
	int64_t ret;
	memcpy(&ret, c->args, sizeof ret);
	if (ret < 0)
		n->refused++;
	/* The block was readable a moment ago; it can only have become
	 * unreachable if the call unshared it (UNSHARE of its own block). */
	if (gm_copy_to(gm, gpa(c->block), c->args, c->size) != GM_OK)
		outcome_verbose(o, "%s: result dropped: argument block no longer shared", c->name);
}

void call_counts_print(const struct outcome *o, const char *who, const struct call_counts *n,
		       uint64_t gm_refused)
{
	uint64_t total = 0;
	for (unsigned i = 0; i < CLOAK_HC_MAX; i++)
		total += n->calls[i];
	outcome_verbose(o, "%s: %llu calls, %llu refused, %llu guest-memory accesses refused",
			who, (unsigned long long)total, (unsigned long long)n->refused,
			(unsigned long long)gm_refused);
}
