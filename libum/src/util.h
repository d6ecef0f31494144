/* SPDX-License-Identifier: MIT */
/* util.h - libum's small helpers with no context (util.c). */
#ifndef UM_UTIL_H
#define UM_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* One decimal number from a file: 0, -errno to open it, -EIO unreadable. */
int um__read_num(const char *path, long long *out);

/*
 * A versioned struct of size bytes at p, whose full layout we know is full
 * bytes: 0, -EINVAL under min, -E2BIG when too large or a field we do not
 * know is set.
 */
int um__struct_size_ok(const void *p, uint32_t size, size_t min, size_t full);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t um__now_ns(void);

#endif /* UM_UTIL_H */
