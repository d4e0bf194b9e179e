/* SPDX-License-Identifier: ISC */
/* Timeout options of the channel service guests: see options.h. */
#include "options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloak/guest.h"

static uint64_t seconds_arg(const char *who, const char *s, const char *name)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);
	if (*s == '\0' || *end != '\0' || v == 0 || v > 86400) {
		printf("%s: %s must be 1..86400 seconds, not '%s'\n", who, name, s);
		cloak_exit(2);
	}
	return (uint64_t)v * NS_PER_S;
}

bool service_timeout_option(const char *who, const char *arg, uint64_t *idle_ns,
			    uint64_t *message_ns)
{
	if (!strncmp(arg, "--idle=", 7))
		*idle_ns = seconds_arg(who, arg + 7, "--idle");
	else if (!strncmp(arg, "--message-timeout=", 18))
		*message_ns = seconds_arg(who, arg + 18, "--message-timeout");
	else
		return false;
	return true;
}
