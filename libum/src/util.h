/* SPDX-License-Identifier: MIT */
/* util.h - libum's small helpers with no context (util.c). */
#ifndef UM_UTIL_H
#define UM_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * libum's thread-local variables: initial-exec, so that the hot calls of
 * libum.so reach them without a __tls_get_addr call each time. They come
 * out of the static TLS glibc keeps spare for libraries (a dlopen()ed
 * libum, as umtorch's, included): a few dozen bytes.
 */
#define UM_TLS _Thread_local __attribute__((tls_model("initial-exec")))

/* One decimal number from a file: 0, -errno to open it, -EIO unreadable. */
int um__read_num(const char *path, long long *out);

/*
 * A versioned struct of size bytes at p, whose full layout we know is full
 * bytes: 0, -EINVAL under min, -E2BIG when too large or a field we do not
 * know is set.
 */
int um__struct_size_ok(const void *p, uint32_t size, size_t min, size_t full);

/*
 * A set of live objects, as an array the caller locks and may walk (v[0] ..
 * v[n-1], in no order): the registries of contexts and of sub-allocators.
 */
struct um__ptrset {
	void **v;
	size_t n, cap;
};

/* 0, or -ENOMEM (the set is unchanged). */
int um__ptrset_add(struct um__ptrset *s, void *p);
/* Drops p if there; the array goes with the last member. */
void um__ptrset_del(struct um__ptrset *s, const void *p);
bool um__ptrset_has(const struct um__ptrset *s, const void *p);

/*
 * Names the calling thread (at most 15 characters: "um-pressure"), so
 * that top -H, ps -L and /proc/PID/task/TID/comm tell libum's threads
 * from the application's.
 */
void um__thread_name(const char *name);

/*
 * bytes for a person: "0 bytes", "512 bytes", "4 KiB", "1.5 MiB" (one
 * decimal below 100 of a unit, where it is not .0); returns buf. Every log
 * line gives sizes this way (units.c; the message rule, libum(7) "Errors").
 */
#define UM_SIZE_STR 24
char *um__size_str(uint64_t bytes, char buf[UM_SIZE_STR]);
/* um__size_str into a buffer of the calling statement's own. */
#define UM_SIZE(bytes) um__size_str((bytes), (char[UM_SIZE_STR]){ 0 })

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t um__now_ns(void);

/*
 * mmap(2) of len bytes with no file (flags has MAP_ANONYMOUS), aligned to
 * align (a power of two), the excess unmapped; NULL with errno set when
 * mmap fails.
 */
void *um__map_aligned(size_t len, size_t align, int prot, int flags);

#endif /* UM_UTIL_H */
