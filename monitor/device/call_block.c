/* SPDX-License-Identifier: ISC */
/* BLOCK_INFO, BLOCK_IO and BLOCK_BATCH: decode, ask block.h, encode. */
#include <string.h>

#include "device.h"

int dc_block_info(struct device *d, struct cloak_hc_block_info *a)
{
	a->name[CLOAK_NAME_MAX - 1] = '\0';
	a->handle = a->capacity = a->sector_size = a->flags = 0;
	unsigned h;
	const struct block_dev *b = devices_block_by_name(d->dev, a->name, &h);
	if (!b) {
		a->ret = -CLOAK_ENOENT;
		return 0;
	}
	a->handle = h;
	a->capacity = b->capacity;
	a->sector_size = b->sector_size;
	a->flags = b->read_only ? CLOAK_BLOCK_RO : 0;
	a->ret = 0;
	return 0;
}

/* One request, alone (BLOCK_IO) or in a batch: 0 or -CLOAK_E*. */
static int64_t block_request(struct device *d, struct block_dev *b, uint64_t op, uint64_t offset,
			     uint64_t buf, uint64_t len)
{
	switch (op) {
	case CLOAK_BLOCK_READ:
	case CLOAK_BLOCK_WRITE:
		return block_rw(b, d->gm, op, offset, gpa(buf), len);
	case CLOAK_BLOCK_FLUSH:
		/* The offset and length of a flush must be 0. */
		return offset || len ? -CLOAK_EINVAL : block_flush(b);
	default:
		return -CLOAK_EINVAL;
	}
}

int dc_block_io(struct device *d, struct cloak_hc_block_io *a)
{
	struct block_dev *b = devices_block(d->dev, a->handle);
	a->ret = b ? block_request(d, b, a->op, a->offset, a->buf, a->len) : -CLOAK_ENOENT;
	return 0;
}

int dc_block_batch(struct device *d, struct cloak_hc_block_batch *a)
{
	struct block_dev *b = devices_block(d->dev, a->handle);
	if (!b) {
		a->ret = -CLOAK_ENOENT;
		return 0;
	}
	if (a->count == 0 || a->reqs % 8) {
		a->ret = -CLOAK_EINVAL;
		return 0;
	}
	if (a->count > CLOAK_BLOCK_BATCH_MAX) {
		a->ret = -CLOAK_E2BIG;
		return 0;
	}
	/* One read of the whole array into a host copy: what runs is what was
	 * checked, whatever the guest (or a READ into the array) changes. */
	struct cloak_block_req r[CLOAK_BLOCK_BATCH_MAX];
	enum gm_status s = gm_copy_from(d->gm, r, gpa(a->reqs), a->count * sizeof r[0]);
	if (s != GM_OK) {
		a->ret = gm_status_abi(s);
		return 0;
	}
	int64_t failed = 0;
	for (uint64_t i = 0; i < a->count; i++) {
		int64_t ret = block_request(d, b, r[i].op, r[i].offset, r[i].buf, r[i].len);
		failed += ret != 0;
		/* Only the OUT field is written back. It was readable a moment
		 * ago and no request can unshare it: a refusal here is a bug. */
		if (gm_copy_to(d->gm, gpa(a->reqs + i * sizeof r[0]), &ret, sizeof ret) != GM_OK)
			return outcome_fail(&d->out, CLOAK_EXIT_VIOLATION,
					    "block_batch: request %llu's status could not be "
					    "written back", (unsigned long long)i);
	}
	a->ret = failed;
	return 0;
}
