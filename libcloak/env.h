/* SPDX-License-Identifier: ISC */
/*
 * libcloak's environment variables, each read and checked in one place. A
 * value is matched case-insensitively against the variable's accepted
 * values; an unset or empty variable means its default; anything else gets
 * one line on stderr naming the variable, the value and the accepted
 * values, and the fallback each variable documents (the choice that
 * protects most; see docs/libcloak.md "Environment"). Uses core.h only.
 */
#ifndef CLOAK_LIBCLOAK_ENV_H
#define CLOAK_LIBCLOAK_ENV_H

#include "core.h"

/* The variables, in the order of env_names[]. */
enum env_var {
	ENV_FORK,             /* drop | copy;            bad: the library's default */
	ENV_FALLBACK,         /* none | mlock;           bad: none */
	ENV_DEBUG,            /* none | guard;           bad: guard */
	ENV_STATS,            /* 0 | 1;                  bad: 1 */
	ENV_TEST_NO_SECRETMEM, /* 0 | 1;                 bad: 0 */
	ENV_OPENSSL,          /* secure | bignum | all;  bad: all */
	ENV_OPENSSL_ALL,      /* 0 | 1;                  bad: 1 */
	ENV_VARS
};

/* The index of the variable's value among its accepted values (in the
 * order listed above), `unset` if it is unset or empty, or its documented
 * fallback after a line on stderr (once per variable and process). */
int env_choice(enum env_var var, int unset) CLOAK_HIDDEN;

#endif
