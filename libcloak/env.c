/* SPDX-License-Identifier: ISC */
/* libcloak's environment variables, checked; see env.h. */
#include "env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

struct env_spec {
	const char *name;
	const char *values[3]; /* accepted, in enum order; NULL-padded */
	int fallback;          /* for a bad value: an index, or -1 for the caller's default */
	const char *why;       /* what the fallback is, for the message */
};

static const struct env_spec specs[ENV_VARS] = {
	[ENV_FORK] = { "CLOAK_FORK", { "drop", "copy" }, -1, "this library's default" },
	[ENV_FALLBACK] = { "CLOAK_FALLBACK", { "none", "mlock" }, 0,
	                   "none: memfd_secret only, no weaker memory" },
	[ENV_DEBUG] = { "CLOAK_DEBUG", { "none", "guard" }, 1, "guard" },
	[ENV_STATS] = { "CLOAK_STATS", { "0", "1" }, 1, "1: statistics at exit" },
	[ENV_TEST_NO_SECRETMEM] = { "CLOAK_TEST_NO_SECRETMEM", { "0", "1" }, 0,
	                            "0: memfd_secret is used" },
	[ENV_OPENSSL] = { "CLOAK_OPENSSL", { "secure", "bignum", "all" }, 2,
	                  "all: every OpenSSL allocation in secret memory" },
	[ENV_OPENSSL_ALL] = { "CLOAK_OPENSSL_ALL", { "0", "1" }, 1,
	                      "1: every OpenSSL allocation in secret memory" },
};

/* One write(2), as libcloak's other diagnostics. */
static void complain(const struct env_spec *s, const char *value)
{
	char msg[320];
	int n = snprintf(msg, sizeof msg, "libcloak: %s=%.40s%s is not ", s->name, value,
	                 strlen(value) > 40 ? "..." : "");
	for (int i = 0; i < 3 && s->values[i] && n > 0 && n < (int)sizeof msg; i++) {
		bool last = i == 2 || !s->values[i + 1];
		n += snprintf(msg + n, sizeof msg - (size_t)n, "%s%s", !i ? "" : last ? " or " : ", ",
		              s->values[i]);
	}
	if (n > 0 && n < (int)sizeof msg)
		n += snprintf(msg + n, sizeof msg - (size_t)n, "; using %s\n", s->why);
	if (n > (int)sizeof msg - 1)
		n = (int)sizeof msg - 1;
	if (n > 0) {
		ssize_t w = write(STDERR_FILENO, msg, (size_t)n);
		(void)w;
	}
}

int env_choice(enum env_var var, int unset)
{
	static int complained[ENV_VARS];
	const struct env_spec *s = &specs[var];
	const char *v = getenv(s->name);
	if (!v || !v[0])
		return unset;
	for (int i = 0; i < 3 && s->values[i]; i++)
		if (!strcasecmp(v, s->values[i]))
			return i;
	if (!__atomic_exchange_n(&complained[var], 1, __ATOMIC_RELAXED))
		complain(s, v);
	return s->fallback >= 0 ? s->fallback : unset;
}
