/* SPDX-License-Identifier: ISC */
/* CLOAK_E* codes as text, from the ABI's one list (CLOAK_ERRORS). */
#include "cloak/guest.h"

const char *cloak_strerror(long code)
{
	long v = code < 0 ? -code : code;
	switch (v) {
	case 0:
		return "success";
#define RT_ERROR_TEXT_(n, NAME, text) \
	case n:                       \
		return "CLOAK_" #NAME ": " text;
		CLOAK_ERRORS(RT_ERROR_TEXT_)
#undef RT_ERROR_TEXT_
	}
	return "unknown CLOAK_E* code";
}
