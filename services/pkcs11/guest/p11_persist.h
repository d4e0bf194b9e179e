/* SPDX-License-Identifier: ISC */
/*
 * The token's persistent store in the guest (docs/pkcs11-store.md): the
 * struct p11_persist of p11_token.h over store.c on the cloak block
 * device "store". Guest only.
 */
#ifndef P11_PERSIST_H
#define P11_PERSIST_H

#include "p11_token.h"

#define P11_PERSIST_DEVICE "store"

/* Opens the store on the block device P11_PERSIST_DEVICE, if the guest has
 * one, and sets *ps for the token's env: NULL without a device (the token
 * lives in memory only). A blank device is a token to initialise; a
 * formatted one gives the token its label and says it is initialised.
 * 0 on success; else it has printed why, with what to do, and returns 1. */
int p11_persist_open(struct p11_token *t, const struct p11_persist **ps, char *report,
		     size_t report_len);

/* A test hook (the guest's --test-stall-commit; before p11_persist_open):
 * the first commit stalls for good between its data write, flushed, and
 * its header write, after the line "pkcs11: test hook: ... stalling", so
 * a test can kill the token at that point (pkcs11_store.bats). */
void p11_persist_stall_commit(void);

#endif
