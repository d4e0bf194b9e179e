/* SPDX-License-Identifier: ISC */
/*
 * What Debian's OpenSSL 3.0 libcrypto.a calls of a hosted C library, for
 * the PKCS#11 token's signatures (services/pkcs11/guest/p11_ossl.c: EC_KEY
 * and ECDSA_do_sign, RSA_private_encrypt). Guest only; the host links
 * libcrypto.so and glibc. The runtime gives malloc and friends, the string
 * functions, printf, abort and errno; compat.c the stack canary and the
 * __mem*_chk functions; nettle_shim.c __assert_fail, __fprintf_chk, fwrite
 * and stderr; the token's p11_sodium.c __errno_location (the runtime's
 * errno: one thread) and its store.c mmap and munmap (heap-backed, for
 * libsodium's Argon2; OpenSSL's only user of them is its secure heap,
 * which the token never sets up). None of those is defined again here.
 * Mbed TLS's few stdio calls (mbedtls_shim.c) end here too.
 *
 * libcrypto.a's objects name far more than a signature runs: its file,
 * socket, dynamic-loading and terminal code sits in the same objects as
 * what the token calls. A guest has no files, no environment, no other
 * process and one vCPU without threads or signals, so:
 *
 *   - real here: thread once/keys/rwlocks (one thread: nothing contends),
 *     pthread_self and getpid (constants), getenv (a guest has no
 *     environment: NULL is the truth), the clocks (the runtime's), qsort,
 *     strtok, glibc's <ctype.h> tables, strerror_r and FD_SET's bounds
 *     check;
 *   - failing: everything else returns the function's documented error
 *     value with errno ENOSYS and says once on the console which function
 *     was reached. OpenSSL treats these as the failures a hosted program
 *     may meet (a missing file, a refused socket) and reports an error;
 *   - stopping: the three with no error value to give (makecontext,
 *     _setjmp, _longjmp: OpenSSL's asynchronous jobs, which the token never
 *     starts) end the guest with a message.
 *
 * Types are glibc's x86-64 ABI (pthread_once_t and pthread_key_t are int
 * and unsigned, pthread_t an unsigned long); structures that are only
 * passed through are void pointers.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include "cloak/guest.h"

/* Linux's values; the runtime's <errno.h> has only a few. */
#define ENOSYS_ 38
#define EAGAIN_ 11
#define EAI_SYSTEM_ (-11)

/* Says once per function that the guest cannot serve it; sets errno. */
static void unavailable(const char *name, int *said)
{
	if (!*said) {
		*said = 1;
		printf("openssl_shim: %s is not available in a guest (ENOSYS)\n", name);
	}
	errno = ENOSYS_;
}

/* A failing function: returns val, errno ENOSYS. */
#define FAIL(ret, name, val, ...)              \
	ret name(__VA_ARGS__);                 \
	ret name(__VA_ARGS__)                  \
	{                                      \
		static int said;               \
		unavailable(#name, &said);     \
		return val;                    \
	}

/* A function with no error value: ends the guest. */
#define STOP(ret, name, ...)                                                                 \
	ret name(__VA_ARGS__);                                                               \
	ret name(__VA_ARGS__)                                                                \
	{                                                                                    \
		cloak_abort_msg("openssl_shim: " #name " reached (not available in a guest)"); \
	}

/* ---- real ---- */

/* glibc's <ctype.h> tables (isspace, isdigit, tolower as OpenSSL's
 * object-name and ASN.1 code uses them): indexable from -128 to 255, the
 * "C" locale, the only one a guest has. Built at the first call. */
static unsigned short ctype_b[384];
static int32_t ctype_lower[384];
static const unsigned short *ctype_b_ptr;
static const int32_t *ctype_lower_ptr;

/* glibc's bit for each class (little-endian layout of <ctype.h>'s _IS*). */
enum {
	IS_UPPER = 1 << 8, IS_LOWER = 1 << 9, IS_ALPHA = 1 << 10, IS_DIGIT = 1 << 11,
	IS_XDIGIT = 1 << 12, IS_SPACE = 1 << 13, IS_PRINT = 1 << 14, IS_GRAPH = 1 << 15,
	IS_BLANK = 1 << 0, IS_CNTRL = 1 << 1, IS_PUNCT = 1 << 2, IS_ALNUM = 1 << 3,
};

static void ctype_init(void)
{
	for (int i = -128; i < 256; i++) {
		int c = i & 0xff;
		unsigned short m = 0;
		int up = c >= 'A' && c <= 'Z', lo = c >= 'a' && c <= 'z', dg = c >= '0' && c <= '9';
		if (i < 0 || c >= 128) {
			ctype_b[i + 128] = 0;
			ctype_lower[i + 128] = i;
			continue;
		}
		if (up)
			m |= IS_UPPER | IS_ALPHA | IS_ALNUM;
		if (lo)
			m |= IS_LOWER | IS_ALPHA | IS_ALNUM;
		if (dg)
			m |= IS_DIGIT | IS_ALNUM | IS_XDIGIT;
		if ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))
			m |= IS_XDIGIT;
		if (c == ' ' || (c >= '\t' && c <= '\r'))
			m |= IS_SPACE;
		if (c == ' ' || c == '\t')
			m |= IS_BLANK;
		if (c < 32 || c == 127)
			m |= IS_CNTRL;
		if (c >= 32 && c < 127)
			m |= IS_PRINT;
		if (c > 32 && c < 127)
			m |= IS_GRAPH;
		if (c > 32 && c < 127 && !up && !lo && !dg)
			m |= IS_PUNCT;
		ctype_b[i + 128] = m;
		ctype_lower[i + 128] = up ? c + 32 : i;
	}
	ctype_b_ptr = ctype_b + 128;
	ctype_lower_ptr = ctype_lower + 128;
}

const unsigned short **__ctype_b_loc(void);
const unsigned short **__ctype_b_loc(void)
{
	if (!ctype_b_ptr)
		ctype_init();
	return &ctype_b_ptr;
}

const int32_t **__ctype_tolower_loc(void);
const int32_t **__ctype_tolower_loc(void)
{
	if (!ctype_b_ptr)
		ctype_init();
	return &ctype_lower_ptr;
}

/* pthread_once_t (an int): 0 never run, 2 running, 1 done. One thread:
 * "running" seen again can only be the init function calling itself. */
int pthread_once(int *once, void (*fn)(void));
int pthread_once(int *once, void (*fn)(void))
{
	if (*once == 1)
		return 0;
	if (*once == 2)
		cloak_abort_msg("openssl_shim: pthread_once called again from its own init function");
	*once = 2;
	fn();
	*once = 1;
	return 0;
}

/* Thread-specific values: one thread, so one value per key. Destructors
 * never run: the one thread never exits (the guest ends with its VM).
 * OpenSSL 3.0 creates a handful of keys at its initialisation. */
#define KEYS 64
static struct {
	int used;
	const void *value;
} keys[KEYS];

int pthread_key_create(unsigned *key, void (*destructor)(void *));
int pthread_key_create(unsigned *key, void (*destructor)(void *))
{
	(void)destructor;
	for (unsigned i = 0; i < KEYS; i++)
		if (!keys[i].used) {
			keys[i].used = 1;
			keys[i].value = NULL;
			*key = i;
			return 0;
		}
	return EAGAIN_;
}

int pthread_key_delete(unsigned key);
int pthread_key_delete(unsigned key)
{
	if (key >= KEYS || !keys[key].used)
		return EINVAL;
	keys[key].used = 0;
	return 0;
}

void *pthread_getspecific(unsigned key);
void *pthread_getspecific(unsigned key)
{
	return key < KEYS && keys[key].used ? (void *)keys[key].value : NULL;
}

int pthread_setspecific(unsigned key, const void *value);
int pthread_setspecific(unsigned key, const void *value)
{
	if (key >= KEYS || !keys[key].used)
		return EINVAL;
	keys[key].value = value;
	return 0;
}

/* OpenSSL's locks (CRYPTO_THREAD_lock_*): one vCPU, no threads, no
 * interrupt handler that calls OpenSSL, so a lock is never contended and
 * taking it is nothing to do. */
int pthread_rwlock_init(void *l, const void *attr);
int pthread_rwlock_init(void *l, const void *attr)
{
	return 0;
}
int pthread_rwlock_destroy(void *l);
int pthread_rwlock_destroy(void *l)
{
	return 0;
}
int pthread_rwlock_rdlock(void *l);
int pthread_rwlock_rdlock(void *l)
{
	return 0;
}
int pthread_rwlock_wrlock(void *l);
int pthread_rwlock_wrlock(void *l)
{
	return 0;
}
int pthread_rwlock_unlock(void *l);
int pthread_rwlock_unlock(void *l)
{
	return 0;
}

/* The one thread of the one process. */
unsigned long pthread_self(void);
unsigned long pthread_self(void)
{
	return 1;
}

int getpid(void);
int getpid(void)
{
	return 1;
}

/* A guest has no environment (OpenSSL asks for OPENSSL_ia32cap,
 * OPENSSL_CONF and the like: none is set, it reads CPUID itself). */
char *getenv(const char *name);
char *getenv(const char *name)
{
	return NULL;
}
char *secure_getenv(const char *name);
char *secure_getenv(const char *name)
{
	return NULL;
}

/* The clocks: the runtime's wall clock (the host's, through the monitor)
 * and its monotonic one (the TSC). */
struct shim_timespec {
	long tv_sec, tv_nsec;
};
int clock_gettime(int clk, struct shim_timespec *ts);
int clock_gettime(int clk, struct shim_timespec *ts)
{
	uint64_t ns;
	if (clk == 0) /* CLOCK_REALTIME */
		ns = cloak_walltime_ns();
	else if (clk == 1 || clk == 4 || clk == 7) /* CLOCK_MONOTONIC, _RAW, CLOCK_BOOTTIME */
		ns = cloak_time_ns();
	else {
		errno = EINVAL;
		return -1;
	}
	ts->tv_sec = (long)(ns / 1000000000u);
	ts->tv_nsec = (long)(ns % 1000000000u);
	return 0;
}

struct shim_timeval {
	long tv_sec, tv_usec;
};
int gettimeofday(struct shim_timeval *tv, void *tz);
int gettimeofday(struct shim_timeval *tv, void *tz)
{
	uint64_t ns = cloak_walltime_ns();
	tv->tv_sec = (long)(ns / 1000000000u);
	tv->tv_usec = (long)(ns % 1000000000u / 1000u);
	return 0;
}

long time(long *t);
long time(long *t)
{
	long s = (long)(cloak_walltime_ns() / 1000000000u);
	if (t)
		*t = s;
	return s;
}

/* The XSI strerror_r (OpenSSL's error strings for errno values). */
int __xpg_strerror_r(int err, char *buf, size_t len);
int __xpg_strerror_r(int err, char *buf, size_t len)
{
	if (len == 0)
		return ERANGE;
	snprintf(buf, len, "errno %d", err);
	return 0;
}

/* Shell sort: OpenSSL sorts a few small tables (object names, stacks). */
static void swap_bytes(unsigned char *a, unsigned char *b, size_t n)
{
	while (n--) {
		unsigned char t = *a;
		*a++ = *b;
		*b++ = t;
	}
}

void qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
void qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	unsigned char *v = base;
	for (size_t gap = n / 2; gap > 0; gap /= 2)
		for (size_t i = gap; i < n; i++)
			for (size_t j = i; j >= gap && cmp(v + (j - gap) * size, v + j * size) > 0; j -= gap)
				swap_bytes(v + (j - gap) * size, v + j * size, size);
}

/* One thread: strtok's hidden state cannot be shared. */
char *strtok(char *s, const char *delim);
char *strtok(char *s, const char *delim)
{
	static char *next;
	if (!s)
		s = next;
	if (!s)
		return NULL;
	s += strspn(s, delim);
	if (!*s) {
		next = NULL;
		return NULL;
	}
	char *e = s + strcspn(s, delim);
	if (*e)
		*e++ = '\0';
	else
		e = NULL;
	next = e;
	return s;
}

/* FD_SET's bounds check (_FORTIFY_SOURCE), in OpenSSL's socket code:
 * never reached, as select() below fails first; checked all the same. */
long __fdelt_chk(long d);
long __fdelt_chk(long d)
{
	if (d < 0 || d >= 1024)
		cloak_abort_msg("openssl_shim: __fdelt_chk: descriptor out of range");
	return d / 64;
}

/* ---- failing: a guest has no files, no terminal, no stdio streams ---- */
/* stdin: only compared and passed to the stream functions below. */
void *stdin;
void *stdin = NULL;

FAIL(void *, fopen, NULL, const char *p, const char *m)
FAIL(void *, fopen64, NULL, const char *p, const char *m)
FAIL(int, fclose, -1, void *f) /* EOF */
FAIL(size_t, fread, 0, void *p, size_t s, size_t n, void *f)
FAIL(char *, fgets, NULL, char *s, int n, void *f)
FAIL(int, feof, 0, void *f)   /* no stream is ever open: nothing is at its end */
FAIL(int, ferror, 1, void *f) /* ... and every stream is in error */
FAIL(int, fflush, -1, void *f)
FAIL(int, fputc, -1, int c, void *f)
FAIL(int, fputs, -1, const char *s, void *f)
FAIL(int, fseek, -1, void *f, long off, int whence)
FAIL(long, ftell, -1, void *f)
FAIL(int, fileno, -1, void *f)
FAIL(int, __vfprintf_chk, -1, void *f, int flag, const char *fmt, void *ap)
FAIL(int, __isoc99_sscanf, -1, const char *s, const char *fmt, ...) /* EOF */
FAIL(void, perror, , const char *s)
FAIL(int, open, -1, const char *p, int flags, ...)
FAIL(int, close, -1, int fd)
FAIL(long, read, -1, int fd, void *b, size_t n)
FAIL(long, write, -1, int fd, const void *b, size_t n)
FAIL(int, fcntl, -1, int fd, int cmd, ...)
FAIL(int, ioctl, -1, int fd, unsigned long req, ...)
FAIL(int, stat, -1, const char *p, void *st)
FAIL(int, fstat, -1, int fd, void *st)
FAIL(void *, opendir, NULL, const char *p)
FAIL(void *, readdir, NULL, void *d)
FAIL(int, closedir, -1, void *d)
FAIL(int, tcgetattr, -1, int fd, void *t)
FAIL(int, tcsetattr, -1, int fd, int a, const void *t)
FAIL(int, select, -1, int n, void *r, void *w, void *e, void *t)

/* ---- failing: no network (the token's only peer is its channel) ---- */
FAIL(int, socket, -1, int d, int t, int p)
FAIL(int, bind, -1, int fd, const void *a, unsigned l)
FAIL(int, connect, -1, int fd, const void *a, unsigned l)
FAIL(int, listen, -1, int fd, int n)
FAIL(int, accept, -1, int fd, void *a, unsigned *l)
FAIL(int, shutdown, -1, int fd, int how)
FAIL(int, getsockname, -1, int fd, void *a, unsigned *l)
FAIL(int, getsockopt, -1, int fd, int lv, int o, void *v, unsigned *l)
FAIL(int, setsockopt, -1, int fd, int lv, int o, const void *v, unsigned l)
FAIL(long, sendmsg, -1, int fd, const void *m, int f)
FAIL(long, recvmsg, -1, int fd, void *m, int f)
FAIL(int, getaddrinfo, EAI_SYSTEM_, const char *n, const char *s, const void *h, void **r)
FAIL(int, getnameinfo, EAI_SYSTEM_, const void *a, unsigned l, char *h, unsigned hl, char *s, unsigned sl, int f)
FAIL(void *, gethostbyname, NULL, const char *n)

void freeaddrinfo(void *ai);
void freeaddrinfo(void *ai)
{
	(void)ai; /* getaddrinfo never gives one */
}

const char *gai_strerror(int e);
const char *gai_strerror(int e)
{
	return "name resolution is not available in a guest";
}

/* ---- failing: no dynamic loading (a guest is one static image) ---- */
FAIL(void *, dlopen, NULL, const char *f, int m)
FAIL(void *, dlsym, NULL, void *h, const char *s)
FAIL(int, dlclose, -1, void *h)
FAIL(int, dladdr, 0, const void *a, void *info)

const char *dlerror(void);
const char *dlerror(void)
{
	return "dynamic loading is not available in a guest";
}

/* ---- failing: no page protections or shared memory (the guest's memory
 * is laid out by the monitor at boot; OpenSSL's secure heap, which wants
 * them, is never set up) ---- */
FAIL(int, mprotect, -1, void *a, size_t l, int p)
FAIL(int, madvise, -1, void *a, size_t l, int adv)
FAIL(int, mlock, -1, const void *a, size_t l)
FAIL(long, sysconf, -1, int name)
FAIL(void *, shmat, (void *)-1, int id, const void *a, int f)
FAIL(int, shmdt, -1, const void *a)
FAIL(int, shmget, -1, int k, size_t s, int f)

/* ---- failing: no system calls, exit handlers, signals, sleeping ---- */
/* getrandom among them: OpenSSL's own seed source fails, and its random
 * bytes come from the token's RAND_METHOD (p11_ossl.c) instead. */
FAIL(long, syscall, -1, long nr, ...)
FAIL(int, atexit, -1, void (*fn)(void)) /* a guest never runs exit handlers */
FAIL(int, sigaction, -1, int s, const void *a, void *o)
FAIL(void *, signal, (void *)-1, int s, void *h) /* SIG_ERR */
FAIL(unsigned, sleep, s, unsigned s)		  /* all of it left unslept */
FAIL(int, usleep, -1, unsigned us)
FAIL(int, uname, -1, void *u)
FAIL(void *, gmtime_r, NULL, const long *t, void *tm)
FAIL(int, getcontext, -1, void *uc)
FAIL(int, setcontext, -1, const void *uc)
STOP(void, makecontext, void *uc, void (*fn)(void), int argc, ...)
STOP(int, _setjmp, void *env)
STOP(void, _longjmp, void *env, int val)
