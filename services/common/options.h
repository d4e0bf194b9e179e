/* SPDX-License-Identifier: ISC */
/* The options every channel service guest takes after `--` (the
 * ssh-agent, the PKCS#11 token): how long a client may stay idle and how
 * long one message may take to arrive. */
#ifndef EXAMPLES_OPTIONS_H
#define EXAMPLES_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#define NS_PER_S 1000000000ull

/* If `arg` is --idle=SECONDS or --message-timeout=SECONDS, sets *idle_ns or
 * *message_ns and returns true; otherwise returns false. A value outside
 * 1..86400 ends the guest with status 2 after a line that names `who`. */
bool service_timeout_option(const char *who, const char *arg, uint64_t *idle_ns,
			    uint64_t *message_ns);

#endif
