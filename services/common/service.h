/* SPDX-License-Identifier: ISC */
/*
 * What a key service guest (the ssh-agent, the PKCS#11 token) does around
 * its protocol, the same in both: the options it takes after `--`, and
 * the channel it serves, one client connection at a time. Guest only.
 */
#ifndef SERVICES_SERVICE_H
#define SERVICES_SERVICE_H

#include <stdbool.h>
#include <stdint.h>

#define NS_PER_S 1000000000ull

/* Reads the guest's arguments: --idle=SECONDS and --message-timeout=SECONDS
 * set *idle_ns and *message_ns, test_flag (a test hook's option) sets
 * *test_set. A value outside 1..86400 or any other argument ends the guest
 * with status 2 after a line that names `who`. */
void service_options(const char *who, int argc, char **argv, const char *test_flag, bool *test_set,
		     uint64_t *idle_ns, uint64_t *message_ns);

/* Opens the channel, after a warning if memory protection is off: its
 * handle, or -1 after a line that says how to run the guest. */
int service_open(const char *who, const char *channel);

/* Serves the channel (handle h, from service_open) forever, one client
 * connection at a time: serve(h) returns a reason to hang up on the client
 * (said on the console unless it is ""), or NULL if the client left.
 * Returns 1, after a line, when the channel fails. */
int service_loop(const char *who, const char *channel, int h, const char *(*serve)(int h));

#endif
