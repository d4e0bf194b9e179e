/* SPDX-License-Identifier: ISC */
/* Device spec pieces; see spec.h. */
#include "spec.h"

#include <string.h>

#include "cloak/abi.h"

int spec_name(const char *spec, const char *what, char *name, const char **rest,
	      struct fail *f)
{
	const char *eq = strchr(spec, '=');
	size_t n = eq ? (size_t)(eq - spec) : 0;
	if (!eq || n == 0 || n >= CLOAK_NAME_MAX)
		return fail_set(f, CLOAK_EXIT_USAGE, "%s '%s': expected NAME=... with a name of "
				"1-%u characters", what, spec, CLOAK_NAME_MAX - 1);
	for (size_t i = 0; i < n; i++) {
		char c = spec[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
			return fail_set(f, CLOAK_EXIT_USAGE, "%s '%s': the name may use only "
					"letters, digits, '_', '-' and '.'", what, spec);
	}
	memcpy(name, spec, n);
	name[n] = '\0';
	*rest = eq + 1;
	return 0;
}

int spec_next_option(const char **opts, const char **opt, size_t *len)
{
	if (!*opts)
		return 0;
	const char *comma = strchr(*opts, ',');
	*opt = *opts;
	*len = comma ? (size_t)(comma - *opts) : strlen(*opts);
	*opts = comma ? comma + 1 : NULL;
	return 1;
}
