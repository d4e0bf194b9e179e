/* SPDX-License-Identifier: ISC */
/* BLOCK_INFO and BLOCK_IO: decode, ask devices/block, encode. */
#include <string.h>

#include "devices/registry.h"
#include "dispatch.h"

int hc_block_info(struct vm *vm, struct cloak_hc_block_info *a)
{
	a->name[CLOAK_NAME_MAX - 1] = '\0';
	a->handle = a->capacity = a->sector_size = a->flags = 0;
	unsigned h;
	const struct block_dev *b = devices_block_by_name(vm->dev, a->name, &h);
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

int hc_block_io(struct vm *vm, struct cloak_hc_block_io *a)
{
	struct block_dev *b = devices_block(vm->dev, a->handle);
	if (!b) {
		a->ret = -CLOAK_ENOENT;
		return 0;
	}
	switch (a->op) {
	case CLOAK_BLOCK_READ:
	case CLOAK_BLOCK_WRITE:
		a->ret = block_rw(b, vm->gm, a->op, a->offset, gpa(a->buf), a->len);
		break;
	case CLOAK_BLOCK_FLUSH:
		/* The offset and length of a flush must be 0. */
		a->ret = a->offset || a->len ? -CLOAK_EINVAL : block_flush(b);
		break;
	default:
		a->ret = -CLOAK_EINVAL;
	}
	return 0;
}
