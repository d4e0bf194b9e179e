/* SPDX-License-Identifier: ISC */
/*
 * The module's side of the token's wire protocol (services/pkcs11/guest/p11_wire.h):
 * one call is one request frame out and one reply frame back, on a
 * connection to the token's socket that is kept for the next call. The
 * token ends a kept connection between frames when it idles or has had
 * its turn (services/pkcs11/guest/main.c): a request that finds it ended goes
 * again, once, on a new connection. Callers hold the module's lock: the
 * buffers and the connection are shared.
 */
#ifndef CLOAK_P11_RPC_H
#define CLOAK_P11_RPC_H

#include "p11_wire.h"

struct rpc {
	enum p11_op op;
	struct wire_writer w; /* the request's arguments go here */
	struct wire_reader r; /* the reply's results come from here */
	size_t replied;	      /* the reply's length */
};

/* Starts a request for the application app. */
void rpc_begin(struct rpc *c, enum p11_op op, const uint8_t app[P11_APP_ID]);
/* Sends it to the token at socket path sock and reads the reply: the
 * token's CK_RV, CKR_ARGUMENTS_BAD if the arguments did not fit a frame,
 * CKR_DEVICE_ERROR if the token cannot be reached or its reply is
 * malformed (a line on stderr says why when CLOAK_PKCS11_DEBUG is set). */
CK_RV rpc_call(struct rpc *c, const char *sock);
/* Closes the kept connection (C_Finalize, and C_Initialize in a child
 * after fork(), whose copy of the parent's connection is not its own). */
void rpc_disconnect(void);
/* After a reply's results were read: CKR_OK if they were exactly what
 * the reply held, else CKR_DEVICE_ERROR. */
CK_RV rpc_end(struct rpc *c, CK_RV rv);
/* Wipes what the call put in the frame buffers (PINs pass through them). */
void rpc_wipe(struct rpc *c);

#endif
