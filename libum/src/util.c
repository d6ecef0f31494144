// SPDX-License-Identifier: MIT
/*
 * util.c - small helpers with no context: one number from a sysfs file (a
 * node's PCI NUMA node, umm.ko's knobs), the size check of versioned
 * structs, the names of kinds (tiers name themselves: tier.c) and the
 * monotonic clock. Every layer may use them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "um.h"
#include "util.h"

int um__read_num(const char *path, long long *out)
{
	char buf[32], *end;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	errno = 0;
	*out = strtoll(buf, &end, 10);
	return errno || end == buf ? -EIO : 0;
}

void um__thread_name(const char *name)
{
	(void)prctl(PR_SET_NAME, name, 0, 0, 0);
}

int um__struct_size_ok(const void *p, uint32_t size, size_t min, size_t full)
{
	const unsigned char *b = p;

	if (size < min)
		return -EINVAL;
	if (size > 4096)
		return -E2BIG;
	/* A newer caller's struct: fields we do not know must be zero. */
	for (size_t i = full; i < size; i++)
		if (b[i])
			return -E2BIG;
	return 0;
}

static const char *const kind_names[UM_KIND_COUNT] = {
	[UM_KIND_GENERIC] = "generic",
	[UM_KIND_OPTIMIZER_STATE] = "optimizer_state",
	[UM_KIND_PARAM] = "param",
	[UM_KIND_GRAD] = "grad",
	[UM_KIND_ACTIVATION] = "activation",
};

const char *um_kind_name(int kind)
{
	return kind >= 0 && kind < UM_KIND_COUNT ? kind_names[kind] : "unknown";
}

uint64_t um__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int um__ptrset_add(struct um__ptrset *s, void *p)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;
		void **v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = p;
	return 0;
}

void um__ptrset_del(struct um__ptrset *s, const void *p)
{
	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i] == p) {
			s->v[i] = s->v[--s->n];
			break;
		}
	}
	if (!s->n) {
		free(s->v);
		s->v = NULL;
		s->cap = 0;
	}
}

bool um__ptrset_has(const struct um__ptrset *s, const void *p)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i] == p)
			return true;
	return false;
}

void *um__map_aligned(size_t len, size_t align, int prot, int flags)
{
	char *raw, *p;

	raw = mmap(NULL, len + align, prot, flags, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	p = (char *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
	if (p > raw)
		munmap(raw, (size_t)(p - raw));
	if (p + len < raw + len + align)
		munmap(p + len, (size_t)(raw + len + align - (p + len)));
	return p;
}

