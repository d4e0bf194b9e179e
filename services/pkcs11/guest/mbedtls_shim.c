/* SPDX-License-Identifier: ISC */
/*
 * What the objects the token links from Debian's libmbedcrypto.a (rsa,
 * bignum, md and the hashes, threading, platform_util) call outside
 * themselves, for the guest; the host links the real ones. The mutexes
 * (Debian builds Mbed TLS with pthread mutexes) do nothing: the guest
 * has one thread. The rest is file I/O, printing and time, which only
 * functions the token never calls use (mbedtls_mpi_read_file, the self
 * tests, X.509 dates): abort if one ever is, except the stdio and time
 * functions OpenSSL names too, which services/common/openssl_shim.c
 * gives (they fail with ENOSYS).
 */
#include <stdlib.h>

#include "mbedtls_guest/pthread.h"

int pthread_mutex_init(pthread_mutex_t *m, const void *attr);
int pthread_mutex_destroy(pthread_mutex_t *m);
int pthread_mutex_lock(pthread_mutex_t *m);
int pthread_mutex_unlock(pthread_mutex_t *m);

int pthread_mutex_init(pthread_mutex_t *m, const void *attr)
{
	(void)m;
	(void)attr;
	return 0;
}

int pthread_mutex_destroy(pthread_mutex_t *m)
{
	(void)m;
	return 0;
}

int pthread_mutex_lock(pthread_mutex_t *m)
{
	(void)m;
	return 0;
}

int pthread_mutex_unlock(pthread_mutex_t *m)
{
	(void)m;
	return 0;
}

/* Never called by the token (see above). */
#define NEVER(name)                  \
	void name(void);             \
	void name(void) { abort(); }
NEVER(__printf_chk)
NEVER(__snprintf_chk)
NEVER(rand)
