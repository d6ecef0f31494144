/* SPDX-License-Identifier: MIT */
/*
 * um_numa.h - host NUMA nodes: discovery, placement and moves (libnuma).
 *
 * Not named numa.h: libum/src is on the include path, and a numa.h there
 * would hide libnuma's own <numa.h>, which numa.c includes.
 *
 * Everything degrades to "one node, 0" where libnuma says NUMA is not
 * available, so callers never need two code paths. Node arguments are
 * 0..um__numa_max_node(), or UM_NUMA_ANY (-1) for "wherever the kernel
 * likes". Functions return 0 / a count, or -errno; none prints.
 */
#ifndef UM_NUMA_H
#define UM_NUMA_H

#include <stddef.h>
#include <stdint.h>

#define UM_NUMA_ANY (-1)

/* 1 if the kernel and libnuma do NUMA here (even with one node), else 0. */
int um__numa_available(void);
/* Highest node number (0 when NUMA is not available). */
int um__numa_max_node(void);
/* Nodes with memory (>= 1). */
int um__numa_node_count(void);
/* 1 if node exists and has memory. */
int um__numa_node_valid(int node);
/* Free and total bytes of node, from the kernel. */
int um__numa_node_mem(int node, uint64_t *free_b, uint64_t *total_b);

/*
 * Node of a PCI device ("0000:17:00.0" or "17:00.0") from sysfs; 0 where
 * the device exists but the kernel gives no node (-1 in sysfs), -ENOENT
 * when the device is unknown, -EINVAL bad address. A NULL bdf gives 0.
 */
int um__numa_pci_node(const char *bdf);
/* Same, reading under root (tests pass a fake sysfs); NULL means "/". */
int um__numa_pci_node_at(const char *root, const char *bdf);

/*
 * Anonymous memory whose pages come from node (mmap + mbind MPOL_BIND,
 * MPOL_MF_STRICT, touched so they exist), page aligned. UM_NUMA_ANY: plain
 * mmap. Free with um__numa_free(). -EINVAL bad node/len, -ENOMEM.
 */
int um__numa_alloc(size_t len, int node, void **out);
void um__numa_free(void *p, size_t len);

/* Set the policy of an existing page-aligned range to node (new pages). */
int um__numa_bind(void *p, size_t len, int node);
/*
 * The calling thread's memory policy, if it binds (MPOL_BIND, as
 * numa_set_membind leaves an application's threads), becomes a preference
 * for the first of those nodes: its own allocations fall back to another
 * node when that one is full instead of waiting in the allocator.
 * Returns 0 (nothing to do included) or -errno.
 */
int um__numa_thread_prefer(void);

/*
 * For the length of one allocation on node by the calling thread (a pool
 * chunk's mmap, mbind and fault-in): a binding of the thread to other
 * nodes becomes a preference for node, so that what the kernel allocates
 * for the chunk under the thread's own policy (page tables, the page table
 * a huge page keeps in reserve) comes from the chunk's node, not from the
 * node the application bound the thread to, which may be the full one the
 * chunk is there to relieve. um__numa_thread_restore() puts the policy
 * back. Does nothing unless the thread binds and node is valid.
 */
struct um_numa_saved_policy {
	int mode;			/* as get_mempolicy gave it */
	int changed;			/* 1: restore puts mode and mask back */
	unsigned long mask[1024 / (8 * sizeof(unsigned long))];
};

void um__numa_thread_place(int node, struct um_numa_saved_policy *saved);
void um__numa_thread_restore(const struct um_numa_saved_policy *saved);

/*
 * Move the pages of [p, p+len) to node with move_pages(2) and rebind the
 * range there so later faults stay. *moved gets the bytes now on node.
 * Pages that cannot move (pinned by a driver: -EBUSY) are left where they
 * are; the return is then -EBUSY and the caller copies instead.
 */
int um__numa_move(void *p, size_t len, int node, uint64_t *moved);

/*
 * Where the pages of [p, p+len) are: counts[i] bytes on node i (counts has
 * ncounts entries, extra nodes are ignored), untouched pages not counted.
 * Returns the node holding most of the bytes, or -ENOENT if none resident.
 */
int um__numa_where(const void *p, size_t len, uint64_t *counts,
		   int ncounts);

/*
 * Choose a destination for host copies: the node among all nodes with
 * the most free bytes, excluding exclude (UM_NUMA_ANY: none), that has
 * at least need bytes free; -ENOSPC if none.
 */
int um__numa_pick(int exclude, uint64_t need);

/*
 * Default node for a context's host copies where LIBUM_HOME_NODE does not
 * name one: dev_node (the GPU's node as its backend reports it, < 0
 * unknown) when it is a valid node, else node 0 where the machine has more
 * than one node (so host copies have a concrete tier the pressure events
 * can name), else UM_NUMA_ANY. A one-node machine gets UM_NUMA_ANY.
 */
int um__numa_default_home(int dev_node);

#endif /* UM_NUMA_H */
