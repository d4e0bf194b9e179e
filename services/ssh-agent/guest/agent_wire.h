/* SPDX-License-Identifier: ISC */
/*
 * The ssh-agent protocol's wire format (draft-miller-ssh-agent, as OpenSSH
 * implements it): its data types on services/common's codec (wire.h:
 * integers, strings, frames), and the parser that turns one request
 * message into a struct agent_request.
 *
 * Pure C with no dependencies beyond <string.h>, so the same object is
 * built into the agent guest and on the host, where unit tests, a
 * libFuzzer target and cloak-ssh-keygen use it. The parser never copies:
 * every field of a parsed request points into the message it was given,
 * and the caller wipes that message after use (it may hold a private key).
 *
 * Framing: every message is a uint32 length then that many bytes, the
 * first of which is the message type. A length of 0 or above
 * AGENT_MSG_MAX ends the connection (agent_frame_len).
 */
#ifndef AGENT_WIRE_H
#define AGENT_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

/* Message numbers (draft section "Message numbers"). */
enum {
	SSH_AGENT_FAILURE = 5,
	SSH_AGENT_SUCCESS = 6,
	SSH_AGENTC_REQUEST_IDENTITIES = 11,
	SSH_AGENT_IDENTITIES_ANSWER = 12,
	SSH_AGENTC_SIGN_REQUEST = 13,
	SSH_AGENT_SIGN_RESPONSE = 14,
	SSH_AGENTC_ADD_IDENTITY = 17,
	SSH_AGENTC_REMOVE_IDENTITY = 18,
	SSH_AGENTC_REMOVE_ALL_IDENTITIES = 19,
	SSH_AGENTC_LOCK = 22,
	SSH_AGENTC_UNLOCK = 23,
	SSH_AGENTC_ADD_ID_CONSTRAINED = 25,
	SSH_AGENTC_EXTENSION = 27,
	SSH_AGENT_EXTENSION_FAILURE = 28,
	SSH_AGENT_EXTENSION_RESPONSE = 29,
};

/* Key constraints in ADD_ID_CONSTRAINED. */
enum {
	SSH_AGENT_CONSTRAIN_LIFETIME = 1,
	SSH_AGENT_CONSTRAIN_CONFIRM = 2,
	SSH_AGENT_CONSTRAIN_EXTENSION = 255,
};

/* SIGN_REQUEST flags: the hash an RSA signature uses. Neither means
 * ssh-rsa (SHA-1), which this agent refuses. */
enum {
	SSH_AGENT_RSA_SHA2_256 = 2,
	SSH_AGENT_RSA_SHA2_512 = 4,
};

/* Largest message accepted (type byte included). Requests real clients
 * send are far smaller: a sign request for a login is a few hundred
 * bytes. */
#define AGENT_MSG_MAX (64u * 1024u)
/* Longest key comment kept; a longer one makes the add fail. */
#define AGENT_COMMENT_MAX 1024u
/* Longest lock passphrase accepted. */
#define AGENT_PASS_MAX 1024u

#define AGENT_P256_NAME "ecdsa-sha2-nistp256"
#define AGENT_P256_CURVE "nistp256"
#define AGENT_P256_POINT 65  /* 04 || X || Y */
#define AGENT_P256_SCALAR 32
/* Public key blob: string name, string curve, string point. */
#define AGENT_P256_BLOB (4 + 19 + 4 + 8 + 4 + AGENT_P256_POINT)

#define AGENT_ED25519_NAME "ssh-ed25519"
#define AGENT_ED25519_PUB 32  /* the public key A */
#define AGENT_ED25519_SEED 32 /* RFC 8032's private key k */
/* Public key blob: string name, string A. */
#define AGENT_ED25519_BLOB (4 + 11 + 4 + AGENT_ED25519_PUB)

#define AGENT_RSA_NAME "ssh-rsa"
#define AGENT_RSA_SHA256_NAME "rsa-sha2-256"
#define AGENT_RSA_SHA512_NAME "rsa-sha2-512"
#define AGENT_RSA_MIN_BITS 2048
#define AGENT_RSA_MAX_BITS 4096
#define AGENT_RSA_N_MAX (AGENT_RSA_MAX_BITS / 8)
#define AGENT_RSA_E_MAX 4 /* public exponents up to 2^32 - 1 (OpenSSH makes 65537) */
/* An RSA key's public part as the store keeps it: e then n, big-endian,
 * each left-padded with zeros to its field's size, so one key has one
 * encoding. */
#define AGENT_RSA_PUB (AGENT_RSA_E_MAX + AGENT_RSA_N_MAX)
/* Its secret: p, q, dp, dq, iq (BearSSL's CRT form), each left-padded to
 * half the largest modulus. */
#define AGENT_RSA_FACTOR_MAX (AGENT_RSA_N_MAX / 2)
#define AGENT_RSA_SECRET (5 * AGENT_RSA_FACTOR_MAX)
/* Public key blob: string name, mpint e, mpint n. */
#define AGENT_RSA_BLOB (4 + 7 + 4 + 1 + AGENT_RSA_E_MAX + 4 + 1 + AGENT_RSA_N_MAX)

/* The key types this agent holds. A key's public part is kept in
 * AGENT_PUB_MAX bytes (the P-256 point, A, or RSA's e and n, then zeros);
 * its secret in AGENT_SECRET_MAX (the P-256 scalar, the Ed25519 seed, or
 * RSA's CRT factors, then zeros). */
enum agent_key_type {
	AGENT_KEY_NONE = 0,
	AGENT_KEY_P256,
	AGENT_KEY_ED25519,
	AGENT_KEY_RSA,
};
#define AGENT_PUB_MAX AGENT_RSA_PUB
#define AGENT_SECRET_MAX AGENT_RSA_SECRET
#define AGENT_BLOB_MAX AGENT_RSA_BLOB
/* Signatures: string name, string (r, s as mpints | the 64 bytes | the
 * RSA signature, as long as n). */
#define AGENT_SIG_MAX (4 + 12 + 4 + AGENT_RSA_N_MAX)

/* Extensions this agent implements (SSH_AGENTC_EXTENSION). */
#define AGENT_EXT_QUERY "query"
#define AGENT_EXT_KEYGEN "keygen@cloak"
#define AGENT_EXT_KEYHASH "keyhash@cloak" /* test hook, see docs/ssh-agent.md */

/* An unsigned big-endian number as an SSH mpint: leading zeros dropped,
 * one zero byte added when the top bit is set. */
void wire_put_mpint(struct wire_writer *w, const uint8_t *be, size_t n);

/* Frame header: returns the body length, or 0 if the connection must be
 * closed (a zero-length message, or one above AGENT_MSG_MAX). */
uint32_t agent_frame_len(const uint8_t hdr[4]);

/* The public key blob of a P-256 key, and its parser: returns the point
 * (AGENT_P256_POINT bytes inside blob) or NULL if blob is anything else. */
void wire_put_p256_blob(struct wire_writer *w, const uint8_t point[AGENT_P256_POINT]);
const uint8_t *wire_p256_blob_point(struct wire_bytes blob);
/* An ecdsa-sha2-nistp256 signature from the raw r || s (32 + 32 bytes). */
void wire_put_p256_signature(struct wire_writer *w, const uint8_t rs[64]);

/* Any key type: the length of its public part, its name, its blob, its
 * blob's parser (the type, with the public part copied to pub, zeros
 * after it; AGENT_KEY_NONE for anything else), and a signature from the
 * raw 64 bytes (r || s for P-256, RFC 8032's R || S for Ed25519), nested
 * in a string. */
size_t agent_pub_len(enum agent_key_type t);
const char *agent_key_name(enum agent_key_type t);
void wire_put_key_blob(struct wire_writer *w, enum agent_key_type t, const uint8_t *pub);
enum agent_key_type wire_key_blob_parse(struct wire_bytes blob, uint8_t pub[AGENT_PUB_MAX]);
void wire_put_signature(struct wire_writer *w, enum agent_key_type t, const uint8_t sig[64]);
/* RSA's e and n (at most AGENT_RSA_E_MAX and AGENT_RSA_N_MAX bytes) in
 * the store's layout (AGENT_RSA_PUB). */
void wire_rsa_pub_layout(struct wire_bytes e, struct wire_bytes n, uint8_t pub[AGENT_RSA_PUB]);
/* An RSA signature (len bytes, as long as n) named alg
 * (AGENT_RSA_SHA256_NAME or AGENT_RSA_SHA512_NAME), nested in a string. */
void wire_put_rsa_signature(struct wire_writer *w, const char *alg, const uint8_t *sig,
			    size_t len);

enum agent_parse {
	AGENT_PARSE_OK = 0,
	AGENT_PARSE_MALFORMED,   /* lengths, truncation, trailing bytes */
	AGENT_PARSE_UNSUPPORTED, /* unknown type, key type or constraint */
};

/* Constraints of ADD_ID_CONSTRAINED and of the keygen extension. */
struct agent_constraints {
	bool has_lifetime;
	uint32_t lifetime_s;
	bool confirm;
};

/* An RSA private key as OpenSSH sends it: positive integers, big-endian
 * without sign byte, n of AGENT_RSA_MIN_BITS..AGENT_RSA_MAX_BITS, odd e of
 * at most AGENT_RSA_E_MAX bytes, d at most as long as n, iqmp, p and q at
 * most AGENT_RSA_FACTOR_MAX bytes. Whether they make a key is
 * agent_rsa.c's check. */
struct agent_rsa_fields {
	struct wire_bytes n, e, d, iqmp, p, q;
};

struct agent_request {
	uint8_t type;
	union {
		struct {
			struct wire_bytes key_blob, data;
			uint32_t flags;
		} sign;
		struct {
			enum agent_key_type key_type;
			/* The public part: agent_pub_len(key_type) bytes
			 * (NULL for RSA, whose fields are in rsa). */
			const uint8_t *point;
			/* P-256: the scalar, 1..32 bytes, big-endian, no
			 * leading zero. Ed25519: the 32-byte seed (the
			 * message's private key is seed || A; the parser
			 * checks that its A is the given one). */
			struct wire_bytes d;
			struct agent_rsa_fields rsa;
			struct wire_bytes comment;
			struct agent_constraints c;
		} add;
		struct {
			struct wire_bytes key_blob;
		} remove;
		struct {
			struct wire_bytes pass;
		} lock;
		struct {
			struct wire_bytes name, contents;
		} ext;
	} u;
};

struct agent_keygen {
	enum agent_key_type key_type;
	struct wire_bytes comment;
	struct agent_constraints c;
};

/* Parses one message body (type byte first). For SSH_AGENTC_EXTENSION
 * only the name and the raw contents are parsed; extensions parse their
 * own contents (agent_parse_keygen). Unknown types parse as
 * AGENT_PARSE_UNSUPPORTED with req->type set. */
enum agent_parse agent_parse_request(const uint8_t *msg, size_t len, struct agent_request *req);

/* keygen@cloak contents: string key type (AGENT_P256_NAME,
 * AGENT_ED25519_NAME or AGENT_RSA_NAME), string
 * comment, then constraints as in ADD_ID_CONSTRAINED. */
enum agent_parse agent_parse_keygen(struct wire_bytes contents, struct agent_keygen *kg);

#endif
