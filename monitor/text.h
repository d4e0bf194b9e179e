/* SPDX-License-Identifier: ISC */
/*
 * Guest bytes on the host's terminal and in its log lines. A guest is
 * hostile: it must not drive the user's terminal (escape sequences, C1
 * controls raw or UTF-8 encoded) nor rewrite the monitor's own lines
 * (carriage return, backspace). Both filters work in place and keep the
 * length, replacing each offending byte with '?'. Pure.
 */
#ifndef CLOAK_TEXT_H
#define CLOAK_TEXT_H

#include <stddef.h>

/* For console output to a terminal: keeps newline, tab and valid UTF-8
 * text; replaces every other control (C0, DEL, C1 in either form) and
 * every byte that is not part of valid UTF-8. */
void text_for_terminal(char *s, size_t n);

/* For one log line: printable ASCII only (anything else, newline
 * included, becomes '?'). */
void text_for_log_line(char *s, size_t n);

#endif
