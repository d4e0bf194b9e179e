/* SPDX-License-Identifier: ISC */
/* The key service guests' options and channel loop: see service.h. */
#include "service.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloak/channel.h"
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

void service_options(const char *who, int argc, char **argv, const char *test_flag, bool *test_set,
		     uint64_t *idle_ns, uint64_t *message_ns)
{
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (!strcmp(arg, test_flag)) {
			*test_set = true;
		} else if (!strncmp(arg, "--idle=", 7)) {
			*idle_ns = seconds_arg(who, arg + 7, "--idle");
		} else if (!strncmp(arg, "--message-timeout=", 18)) {
			*message_ns = seconds_arg(who, arg + 18, "--message-timeout");
		} else {
			printf("%s: unknown option '%s' (known: --idle=S, --message-timeout=S, %s)\n", who,
			       arg, test_flag);
			cloak_exit(2);
		}
	}
}

int service_open(const char *who, const char *channel)
{
	if (!cloak_protection())
		printf("%s: warning: memory protection is off\n", who);
	int h = cloak_chan_open(channel);
	if (h < 0)
		printf("%s: no channel '%s' (%d): run with --channel %s=listen:SOCKET\n", who, channel, h,
		       channel);
	return h < 0 ? -1 : h;
}

int service_loop(const char *who, const char *channel, int h, const char *(*serve)(int h))
{
	for (;;) {
		const char *why = serve(h);
		if (why) {
			if (*why)
				printf("%s: hung up on a client: %s\n", who, why);
			cloak_chan_hangup(h);
		}
		h = cloak_chan_open(channel);
		if (h < 0) {
			printf("%s: channel error %d\n", who, h);
			return 1;
		}
	}
}
