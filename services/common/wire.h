/* SPDX-License-Identifier: ISC */
/*
 * The byte codec both key services' protocols are built on: the SSH
 * agent's (services/ssh-agent/guest/agent_wire.h) and the PKCS#11 token's
 * (services/pkcs11/guest/p11_wire.h). Integers are big-endian u8, u32 and
 * u64; a string is a u32 length then that many bytes; a frame is a u32
 * length then its body.
 *
 * Nothing here allocates. A reader never reads past its input and a
 * writer never writes past its buffer; each remembers its first failure
 * (bad) and fails every later call, so a parser can read all its fields
 * and check once at the end. Pure C with no dependency beyond <string.h>:
 * the same object is built into the guests and on the host (the PKCS#11
 * module, cloak-ssh-keygen, unit tests, fuzz targets).
 */
#ifndef SERVICES_WIRE_H
#define SERVICES_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wire_bytes {
	const uint8_t *p;
	size_t len;
};

struct wire_reader {
	const uint8_t *p;
	size_t left;
	bool bad; /* a read ran past the end: every later read fails too */
};

struct wire_writer {
	uint8_t *p;
	size_t cap, len;
	bool bad; /* a write did not fit: the output is unusable */
};

void wire_reader_init(struct wire_reader *r, const void *p, size_t len);
/* Exactly n raw bytes (no length before them), or NULL. */
const uint8_t *wire_get_raw(struct wire_reader *r, size_t n);
uint8_t wire_get_u8(struct wire_reader *r);
uint32_t wire_get_u32(struct wire_reader *r);
uint64_t wire_get_u64(struct wire_reader *r);
/* A string: its bytes point into the input ({ NULL, 0 } if it ran short). */
struct wire_bytes wire_get_string(struct wire_reader *r);
/* The rest of the input, consumed. */
struct wire_bytes wire_get_rest(struct wire_reader *r);
/* True when nothing went wrong and every byte was consumed. */
bool wire_done(const struct wire_reader *r);
bool wire_bytes_eq(struct wire_bytes b, const char *s);

void wire_writer_init(struct wire_writer *w, void *buf, size_t cap);
void wire_put_raw(struct wire_writer *w, const void *p, size_t n);
void wire_put_u8(struct wire_writer *w, uint8_t v);
void wire_put_u32(struct wire_writer *w, uint32_t v);
void wire_put_u64(struct wire_writer *w, uint64_t v);
void wire_put_string(struct wire_writer *w, const void *p, size_t n);
void wire_put_cstring(struct wire_writer *w, const char *s);
/* Room for a string of n bytes, its length written: the caller fills it
 * (NULL, with w->bad set, if it does not fit). */
uint8_t *wire_put_string_room(struct wire_writer *w, size_t n);
/* Nested strings: begin returns a mark, end fills in the length. */
size_t wire_begin_string(struct wire_writer *w);
void wire_end_string(struct wire_writer *w, size_t mark);

/* A frame's 4-byte header: the body length, or 0 if it is 0 or above
 * max (the connection is then ended); and the header for a body. */
uint32_t wire_frame_len(const uint8_t hdr[4], uint32_t max);
void wire_frame_hdr(uint8_t hdr[4], uint32_t len);

#endif
