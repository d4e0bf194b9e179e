/* SPDX-License-Identifier: ISC */
/* Seed material for the key service guests' keys and random numbers (the
 * ssh-agent's and the PKCS#11 token's): CPU and host sources, mixed. */
#ifndef SERVICES_ENTROPY_H
#define SERVICES_ENTROPY_H

#include <stddef.h>

#include <bearssl/bearssl_rand.h>

/* Seeds `drbg` (HMAC-DRBG over SHA-256) from every source that works:
 * RDSEED and RDRAND where CPUID offers them and they report success (carry
 * flag), and the host's getrandom through the monitor. Writes a one-line
 * description of the sources used into `report`. Returns the number of
 * sources used (0: no entropy at all, the caller must refuse to go on). */
int entropy_seed(br_hmac_drbg_context *drbg, char *report, size_t report_len);

#endif
