/* SPDX-License-Identifier: ISC */
/*
 * Guest only: Debian's Mbed TLS is built with MBEDTLS_THREADING_PTHREAD,
 * so its RSA context holds a pthread_mutex_t and its headers include
 * <pthread.h>, which a guest does not have. The type has glibc's x86-64
 * size and alignment (checked by test_pkcs11 on the host), so the
 * context's layout is the library's; the guest is single-threaded and
 * mbedtls_shim.c's mutex functions do nothing.
 */
#ifndef P11_GUEST_PTHREAD_H
#define P11_GUEST_PTHREAD_H

typedef union {
	char size[40];
	long align;
} pthread_mutex_t;

#endif
