/*
 * BLOCK_INFO and BLOCK_IO: raw disk images. Data moves between the image
 * file and guest memory with gm_pread/gm_pwrite, which check the whole
 * guest range (bounds, and shared pages once protection is on) before any
 * byte moves. Every field of a request is validated first, so a request
 * either fails with a CLOAK_E* code having touched nothing, or transfers
 * exactly the range asked for, inside the image.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "devices.h"
#include "hypercall.h"

static int hc_block_info(struct vm *vm, void *args)
{
	struct cloak_hc_block_info *a = args;
	a->name[CLOAK_NAME_MAX - 1] = '\0';
	a->handle = a->capacity = a->sector_size = a->flags = 0;
	a->ret = -CLOAK_ENOENT;
	if (!vm->dev)
		return 0;
	for (unsigned i = 0; i < vm->dev->nblock; i++) {
		const struct block_dev *b = &vm->dev->block[i];
		if (strcmp(b->name, a->name))
			continue;
		a->handle = i;
		a->capacity = b->capacity;
		a->sector_size = b->sector_size;
		a->flags = b->read_only ? CLOAK_BLOCK_RO : 0;
		a->ret = 0;
		break;
	}
	return 0;
}

static int64_t errno_to_cloak(int e)
{
	switch (e) {
	case EFAULT: return -CLOAK_EFAULT;
	case EACCES: return -CLOAK_EACCES;
	default: return -CLOAK_EIO;
	}
}

/* Validates a read or write; 0 or a negative CLOAK_E* code. */
static int64_t check_rw(const struct block_dev *b, const struct cloak_hc_block_io *a)
{
	uint64_t end;
	if (a->len == 0 || a->len % b->sector_size || a->offset % b->sector_size)
		return -CLOAK_EINVAL;
	if (a->len > CLOAK_BLOCK_IO_MAX)
		return -CLOAK_E2BIG;
	if (__builtin_add_overflow(a->offset, a->len, &end) || end > b->capacity)
		return -CLOAK_ERANGE;
	if (a->op == CLOAK_BLOCK_WRITE && b->read_only)
		return -CLOAK_EROFS;
	return 0;
}

static int64_t do_rw(struct vm *vm, const struct block_dev *b, const struct cloak_hc_block_io *a)
{
	uint64_t done = 0;
	while (done < a->len) {
		gpa_t g = gpa(a->buf + done);
		int64_t off = (int64_t)(a->offset + done);
		int64_t n = a->op == CLOAK_BLOCK_READ
				    ? gm_pread(vm->gm, b->fd, g, a->len - done, off)
				    : gm_pwrite(vm->gm, b->fd, g, a->len - done, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || (n == 0 && a->op == CLOAK_BLOCK_READ)) {
			/* 0 bytes: the image shrank under us since start-up. */
			int e = n < 0 ? errno : EIO;
			vm_verbose(vm, "block '%s': %s of %llu bytes at %llu failed: %s", b->name,
				   a->op == CLOAK_BLOCK_READ ? "read" : "write",
				   (unsigned long long)a->len, (unsigned long long)a->offset,
				   strerror(e));
			return errno_to_cloak(e);
		}
		done += (uint64_t)n;
	}
	return 0;
}

static int hc_block_io(struct vm *vm, void *args)
{
	struct cloak_hc_block_io *a = args;
	if (!vm->dev || a->handle >= vm->dev->nblock) {
		a->ret = -CLOAK_ENOENT;
		return 0;
	}
	const struct block_dev *b = &vm->dev->block[a->handle];
	switch (a->op) {
	case CLOAK_BLOCK_READ:
	case CLOAK_BLOCK_WRITE:
		a->ret = check_rw(b, a);
		if (a->ret == 0)
			a->ret = do_rw(vm, b, a);
		break;
	case CLOAK_BLOCK_FLUSH:
		/* Everything written before is on stable storage when this
		 * returns 0; the offset and length of a flush must be 0. */
		if (a->offset || a->len)
			a->ret = -CLOAK_EINVAL;
		else if (b->read_only)
			a->ret = 0;
		else
			a->ret = fdatasync(b->fd) ? -CLOAK_EIO : 0;
		break;
	default:
		a->ret = -CLOAK_EINVAL;
	}
	return 0;
}

const struct hc_def hc_block_info_def = { CLOAK_HC_BLOCK_INFO, "block_info",
					  sizeof(struct cloak_hc_block_info), hc_block_info };
const struct hc_def hc_block_io_def = { CLOAK_HC_BLOCK_IO, "block_io",
					sizeof(struct cloak_hc_block_io), hc_block_io };
