// SPDX-License-Identifier: MIT
/*
 * misc.c - human sizes, the clock, medians, small files.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "ut.h"

char *ut_size_str(uint64_t bytes, char buf[UT_SIZE_STR])
{
	static const char *const units[] = {
		"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"
	};
	unsigned int u = 0;
	double v = (double)bytes;

	while (v >= 1024.0 && u < 6) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, UT_SIZE_STR, "%llu B", (unsigned long long)bytes);
	else if (v - (double)(uint64_t)v < 0.05 || v >= 100.0)
		snprintf(buf, UT_SIZE_STR, "%.0f %s", v, units[u]);
	else
		snprintf(buf, UT_SIZE_STR, "%.1f %s", v, units[u]);
	return buf;
}

uint64_t ut_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double ut_median(double *v, size_t n)
{
	if (!n)
		return 0.0;
	qsort(v, n, sizeof(*v), cmp_double);
	if (n % 2)
		return v[n / 2];
	return (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

int ut_read_file(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd, err;

	if (!len)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	err = errno;
	close(fd);
	if (n < 0)
		return -err;
	buf[n] = '\0';
	return 0;
}
