/* SPDX-License-Identifier: MIT */
/*
 * numa.c - host NUMA nodes through libnuma's thin syscall wrappers.
 *
 * libnuma's allocation helpers (numa_alloc_onnode, ...) report failures by
 * printing to stderr, which a library must not do, so placement is done
 * here with mmap + mbind and moves with move_pages; libnuma is used for
 * discovery and the syscall wrappers only.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include "um_numa.h"
#include "util.h"

#define NODE_BITS	1024
#define NODE_WORDS	(NODE_BITS / (8 * sizeof(unsigned long)))
#define MOVE_BATCH	4096	/* pages per move_pages call */

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static long page_size(void)
{
	static long ps;

	if (!ps)
		ps = sysconf(_SC_PAGESIZE);
	return ps;
}

int um__numa_available(void)
{
	static int avail = -2;

	if (avail == -2)
		avail = numa_available() >= 0;
	return avail;
}

int um__numa_max_node(void)
{
	int n;

	if (!um__numa_available())
		return 0;
	n = numa_max_node();
	if (n < 0)
		return 0;
	return n < NODE_BITS ? n : NODE_BITS - 1;
}

int um__numa_node_valid(int node)
{
	long long sz;

	if (node < 0 || node > um__numa_max_node())
		return 0;
	if (!um__numa_available())
		return node == 0;
	sz = numa_node_size64(node, NULL);
	return sz > 0;
}

int um__numa_node_count(void)
{
	int n, count = 0;

	for (n = 0; n <= um__numa_max_node(); n++)
		count += um__numa_node_valid(n);
	return count ? count : 1;
}

/* Fallback for machines without NUMA: the whole machine is node 0. */
static int meminfo_total(uint64_t *free_b, uint64_t *total_b)
{
	long pages = sysconf(_SC_PHYS_PAGES);
	long avail = sysconf(_SC_AVPHYS_PAGES);

	if (pages <= 0 || avail < 0)
		return -EIO;
	*total_b = (uint64_t)pages * (uint64_t)page_size();
	*free_b = (uint64_t)avail * (uint64_t)page_size();
	return 0;
}

int um__numa_node_mem(int node, uint64_t *free_b, uint64_t *total_b)
{
	long long total, free_ll = 0;
	uint64_t f, t;

	if (!free_b)
		free_b = &f;
	if (!total_b)
		total_b = &t;
	if (!um__numa_available()) {
		if (node != 0)
			return -EINVAL;
		return meminfo_total(free_b, total_b);
	}
	if (!um__numa_node_valid(node))
		return -EINVAL;
	total = numa_node_size64(node, &free_ll);
	if (total <= 0 || free_ll < 0)
		return -EIO;
	*total_b = (uint64_t)total;
	*free_b = (uint64_t)free_ll;
	return 0;
}

/* "dddd:bb:dd.f" or "bb:dd.f", hex; normalised into out with a domain. */
static int parse_bdf(const char *bdf, char *out, size_t len)
{
	unsigned int dom = 0, bus, dev, fn;
	int n = 0;
	size_t i;

	for (i = 0; bdf[i]; i++)
		if (!isxdigit((unsigned char)bdf[i]) && bdf[i] != ':' &&
		    bdf[i] != '.')
			return -EINVAL;
	if (sscanf(bdf, "%x:%x:%x.%x%n", &dom, &bus, &dev, &fn, &n) == 4 &&
	    !bdf[n]) {
		/* full form */
	} else if (n = 0, dom = 0,
		   sscanf(bdf, "%x:%x.%x%n", &bus, &dev, &fn, &n) == 3 &&
		   !bdf[n]) {
		/* short form */
	} else {
		return -EINVAL;
	}
	if (dom > 0xffff || bus > 0xff || dev > 0x1f || fn > 7)
		return -EINVAL;
	snprintf(out, len, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
	return 0;
}

int um__numa_pci_node_at(const char *root, const char *bdf)
{
	char norm[32], path[PATH_MAX];
	long long node;
	int ret;

	if (!bdf)
		return 0;
	ret = parse_bdf(bdf, norm, sizeof(norm));
	if (ret)
		return ret;
	if (!root)
		root = "";
	if ((size_t)snprintf(path, sizeof(path),
			     "%s/sys/bus/pci/devices/%s/numa_node", root,
			     norm) >= sizeof(path))
		return -ENAMETOOLONG;
	ret = um__read_num(path, &node);
	if (ret)
		return ret;
	/* -1: the platform does not say; treat as node 0. */
	if (node < 0)
		return 0;
	if (node >= NODE_BITS)
		return -EIO;
	return (int)node;
}

int um__numa_pci_node(const char *bdf)
{
	return um__numa_pci_node_at(NULL, bdf);
}

static void node_mask(unsigned long *mask, int node)
{
	memset(mask, 0, NODE_WORDS * sizeof(*mask));
	mask[node / (8 * sizeof(*mask))] |= 1ul << (node % (8 * sizeof(*mask)));
}

static int check_range(const void *p, size_t len)
{
	if (!p || !len || ((uintptr_t)p & (uintptr_t)(page_size() - 1)))
		return -EINVAL;
	return 0;
}

/* a range for placement on node: both checked */
static int check_range_node(const void *p, size_t len, int node)
{
	int ret = check_range(p, len);

	if (ret)
		return ret;
	return um__numa_node_valid(node) ? 0 : -EINVAL;
}

int um__numa_bind(void *p, size_t len, int node)
{
	unsigned long mask[NODE_WORDS];
	int ret;

	ret = check_range_node(p, len, node);
	if (ret)
		return ret;
	if (!um__numa_available())
		return 0;
	node_mask(mask, node);
	if (mbind(p, len, MPOL_BIND, mask, NODE_BITS + 1, 0))
		return -errno;
	return 0;
}

int um__numa_thread_prefer(void)
{
	unsigned long mask[NODE_WORDS] = { 0 }, one[NODE_WORDS] = { 0 };
	int mode = 0;

	if (!um__numa_available())
		return 0;
	if (get_mempolicy(&mode, mask, NODE_BITS + 1, NULL, 0))
		return -errno;
	if (mode != MPOL_BIND)
		return 0;
	for (int n = 0; n < NODE_BITS; n++) {
		if (!(mask[n / (8 * sizeof(long))] &
		      (1ul << (n % (8 * sizeof(long))))))
			continue;
		node_mask(one, n);
		if (set_mempolicy(MPOL_PREFERRED, one, NODE_BITS + 1))
			return -errno;
		return 0;
	}
	return 0;
}

_Static_assert(sizeof(((struct um_numa_saved_policy *)0)->mask) ==
	       NODE_WORDS * sizeof(unsigned long), "a whole node mask");

void um__numa_thread_place(int node, struct um_numa_saved_policy *saved)
{
	unsigned long one[NODE_WORDS];

	saved->changed = 0;
	if (!um__numa_available() || !um__numa_node_valid(node))
		return;
	if (get_mempolicy(&saved->mode, saved->mask, NODE_BITS + 1, NULL, 0))
		return;
	/* the mode flags ride in the high bits of what get_mempolicy gives */
	if ((saved->mode & 0xff) != MPOL_BIND)
		return;
	node_mask(one, node);
	if (!set_mempolicy(MPOL_PREFERRED, one, NODE_BITS + 1))
		saved->changed = 1;
}

void um__numa_thread_restore(const struct um_numa_saved_policy *saved)
{
	if (saved->changed)
		(void)set_mempolicy(saved->mode, saved->mask, NODE_BITS + 1);
}

/* Fault every page in for writing; MADV_POPULATE_WRITE where the kernel has it. */
static void populate(void *p, size_t len)
{
	volatile char *c = p;
	size_t off;

	if (!madvise(p, len, MADV_POPULATE_WRITE))
		return;
	for (off = 0; off < len; off += (size_t)page_size())
		c[off] = 0;
}

int um__numa_alloc(size_t len, int node, void **out)
{
	void *p;
	int ret;

	if (!out || !len || len > SIZE_MAX / 2)
		return -EINVAL;
	if (node != UM_NUMA_ANY && !um__numa_node_valid(node))
		return -EINVAL;
	len = (len + (size_t)page_size() - 1) & ~((size_t)page_size() - 1);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	if (node != UM_NUMA_ANY) {
		ret = um__numa_bind(p, len, node);
		if (ret) {
			munmap(p, len);
			return ret;
		}
	}
	populate(p, len);
	*out = p;
	return 0;
}

void um__numa_free(void *p, size_t len)
{
	if (!p || !len)
		return;
	len = (len + (size_t)page_size() - 1) & ~((size_t)page_size() - 1);
	munmap(p, len);
}

/*
 * One move_pages pass over npages pages from base. nodes NULL: query only.
 * status[] gets the node of each page or -errno.
 */
static int move_batch(char *base, size_t npages, const int *nodes, int *status,
		      int flags)
{
	void *pages[MOVE_BATCH];
	size_t i;
	long ret;

	for (i = 0; i < npages; i++)
		pages[i] = base + i * (size_t)page_size();
	ret = move_pages(0, npages, pages, nodes, status, flags);
	if (ret < 0)
		return -errno;
	return 0;
}

/*
 * Retry the pages of one batch that came back -EBUSY (a page caught in a
 * per-CPU LRU cache, or under I/O, is busy for a moment; a pinned page stays
 * busy). Returns the number still busy.
 */
static size_t retry_busy(char *base, size_t n, int node, int *status)
{
	void *pages[MOVE_BATCH];
	int nodes[MOVE_BATCH], st[MOVE_BATCH], idx[MOVE_BATCH];
	size_t busy, i;

	for (int round = 0; round < 4; round++) {
		busy = 0;
		for (i = 0; i < n; i++) {
			if (status[i] != -EBUSY && status[i] != -EAGAIN)
				continue;
			pages[busy] = base + i * (size_t)page_size();
			nodes[busy] = node;
			idx[busy++] = (int)i;
		}
		if (!busy)
			return 0;
		sched_yield();
		if (move_pages(0, busy, pages, nodes, st, MPOL_MF_MOVE) < 0)
			return busy;
		for (i = 0; i < busy; i++)
			status[idx[i]] = st[i];
	}
	for (busy = 0, i = 0; i < n; i++)
		busy += status[i] == -EBUSY || status[i] == -EAGAIN;
	return busy;
}

int um__numa_move(void *p, size_t len, int node, uint64_t *moved)
{
	int status[MOVE_BATCH], batch_nodes[MOVE_BATCH];
	size_t npages, done, i, n, busy = 0;
	uint64_t on_node = 0;
	char *base = p;
	int ret;

	ret = check_range_node(p, len, node);
	if (ret)
		return ret;
	npages = (len + (size_t)page_size() - 1) / (size_t)page_size();
	if (!um__numa_available()) {
		if (moved)
			*moved = (uint64_t)npages * (uint64_t)page_size();
		return 0;
	}
	for (i = 0; i < MOVE_BATCH; i++)
		batch_nodes[i] = node;
	for (done = 0; done < npages; done += n) {
		char *b = base + done * (size_t)page_size();

		n = npages - done < MOVE_BATCH ? npages - done : MOVE_BATCH;
		ret = move_batch(b, n, batch_nodes, status, MPOL_MF_MOVE);
		if (ret)
			return ret;
		busy += retry_busy(b, n, node, status);
		for (i = 0; i < n; i++)
			if (status[i] == node)
				on_node += (uint64_t)page_size();
	}
	/* Later faults (pages not yet touched) land on node too. */
	ret = um__numa_bind(p, npages * (size_t)page_size(), node);
	if (moved)
		*moved = on_node;
	if (busy)
		return -EBUSY;
	return ret;
}

int um__numa_where(const void *p, size_t len, uint64_t *counts, int ncounts)
{
	int status[MOVE_BATCH];
	uint64_t per[64] = { 0 };
	size_t npages, done, i, n;
	int best = -ENOENT, ret, k;
	uint64_t best_b = 0;

	ret = check_range(p, len);
	if (ret)
		return ret;
	if (ncounts < 0 || (ncounts && !counts))
		return -EINVAL;
	for (k = 0; k < ncounts; k++)
		counts[k] = 0;
	npages = (len + (size_t)page_size() - 1) / (size_t)page_size();
	if (!um__numa_available()) {
		if (ncounts)
			counts[0] = (uint64_t)npages * (uint64_t)page_size();
		return 0;
	}
	for (done = 0; done < npages; done += n) {
		n = npages - done < MOVE_BATCH ? npages - done : MOVE_BATCH;
		ret = move_batch((char *)p + done * (size_t)page_size(), n,
				 NULL, status, 0);
		if (ret)
			return ret;
		for (i = 0; i < n; i++) {
			if (status[i] < 0 || status[i] >= 64)
				continue;
			per[status[i]] += (uint64_t)page_size();
		}
	}
	for (k = 0; k < 64; k++) {
		if (k < ncounts)
			counts[k] = per[k];
		if (per[k] > best_b) {
			best_b = per[k];
			best = k;
		}
	}
	return best;
}

int um__numa_pick(int exclude, uint64_t need)
{
	uint64_t free_b, total_b, best_free = 0;
	int n, best = -ENOSPC;

	for (n = 0; n <= um__numa_max_node(); n++) {
		if (n == exclude || !um__numa_node_valid(n))
			continue;
		if (um__numa_node_mem(n, &free_b, &total_b))
			continue;
		if (free_b < need || free_b <= best_free)
			continue;
		best_free = free_b;
		best = n;
	}
	return best;
}

int um__numa_default_home(int dev_node)
{
	if (um__numa_node_count() < 2)
		return UM_NUMA_ANY;
	if (dev_node >= 0 && um__numa_node_valid(dev_node))
		return dev_node;
	return um__numa_node_valid(0) ? 0 : UM_NUMA_ANY;
}
