// SPDX-License-Identifier: MIT
/*
 * units.c - sizes for a person, as every log line gives them. A file of
 * its own so that the CUDA plugin, which has no libum symbols to bind to,
 * compiles its own copy (as it does tier.c).
 */
#include <stdio.h>

#include "util.h"

char *um__size_str(uint64_t bytes, char buf[UM_SIZE_STR])
{
	static const char *const unit[] = {
		"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"
	};
	double v = (double)bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(buf, UM_SIZE_STR, "%llu bytes", (unsigned long long)bytes);
		return buf;
	}
	while (v >= 1024.0 && u < 5) {
		v /= 1024.0;
		u++;
	}
	/* "2.0 MiB" says no more than "2 MiB" */
	if (v >= 100.0 || v - (double)(uint64_t)v < 0.05)
		snprintf(buf, UM_SIZE_STR, "%.0f %s", v, unit[u]);
	else
		snprintf(buf, UM_SIZE_STR, "%.1f %s", v, unit[u]);
	return buf;
}
