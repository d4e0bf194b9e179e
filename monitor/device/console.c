/* SPDX-License-Identifier: ISC */
/* The console; see console.h. */
#include "console.h"

#include <unistd.h>

#include "text.h"

static bool is_tty;

void console_init(void)
{
	is_tty = isatty(STDOUT_FILENO);
}

uint64_t console_write(char *buf, size_t n)
{
	if (is_tty)
		text_for_terminal(buf, n);
	size_t done = 0;
	while (done < n) {
		ssize_t w = write(STDOUT_FILENO, buf + done, n - done);
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	return done;
}
