/* SPDX-License-Identifier: ISC */
/*
 * One descriptor passed with a small message over a Unix socket
 * (SCM_RIGHTS): the path broker's answers (process/broker.c) and the
 * device process's maps for the runner (fd_pass_own_maps).
 */
#ifndef CLOAK_PROCESS_FD_PASS_H
#define CLOAK_PROCESS_FD_PASS_H

#include <stddef.h>

/* Sends the len bytes at data, with fd attached unless it is -1.
 * 0, or -1 with errno. */
int fd_pass_send(int sock, const void *data, size_t len, int fd);
/* Receives exactly len bytes into data; *fd is the descriptor that came
 * with them (close-on-exec), or -1 if none did. 0, or -1 with errno
 * (EPIPE: the peer left or sent another size). */
int fd_pass_recv(int sock, void *data, size_t len, int *fd);

/* The device process, first thing after the fork, before it reads any
 * input: its own /proc/self/maps, for the runner's check of what it maps
 * (runner/device_maps.h; neither process is dumpable, so the runner could
 * not open it). Closes sock. 0, or -1. */
int fd_pass_own_maps(int sock);

#endif
