// SPDX-License-Identifier: GPL-2.0
/*
 * Where umm.ko reads the kernel's memory state: the one file that knows
 * which counters a module may reach and how. Zones go through the kernel's
 * accessors (zone_page_state(), zone_managed_pages(), the *_wmark_pages()
 * helpers); what neither kernel exports to modules (checked in the
 * Module.symvers of Debian's 6.1.0 and 6.12.x: no node_page_state(), no
 * memcg_page_state(), no mem_cgroup_usage(), no lruvec_page_state() on
 * 6.12, no mm_kobj on 6.12) is read here as a field, each with the
 * kernels it was read on.
 */
#include <linux/cgroup.h>
#include <linux/kernfs.h>
#include <linux/kobject.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/mm_inline.h>
#include <linux/mmzone.h>
#include <linux/page_counter.h>
#include <linux/rcupdate.h>
#include <linux/string.h>
#include <linux/vmstat.h>

#include "umm_internal.h"

/*
 * A node counter. node_page_state() is not exported (6.1, 6.12); the
 * per-node array pglist_data.vm_stat[] is the same in both.
 */
static unsigned long umm_pgdat_state(pg_data_t *pgdat,
				     enum node_stat_item item)
{
	long x = atomic_long_read(&pgdat->vm_stat[item]);

	return x < 0 ? 0 : x;
}

/**
 * umm_node_mem_read() - a node's free memory, watermarks and cheaply
 * reclaimable memory, in pages.
 * @nid:	a node with memory.
 * @m:		filled in.
 *
 * Context: any; the counters are read without locks, as /proc/meminfo
 * reads them.
 */
void umm_node_mem_read(int nid, struct umm_node_mem *m)
{
	pg_data_t *pgdat = NODE_DATA(nid);
	int z;

	memset(m, 0, sizeof(*m));
	for (z = 0; z < MAX_NR_ZONES; z++) {
		struct zone *zone = &pgdat->node_zones[z];

		if (!zone_managed_pages(zone))
			continue;
		m->free += zone_page_state(zone, NR_FREE_PAGES);
		m->managed += zone_managed_pages(zone);
		m->wmark_min += min_wmark_pages(zone);
		m->wmark_low += low_wmark_pages(zone);
	}
	/* high watermarks plus lowmem reserves: pglist_data field, 6.1, 6.12 */
	m->reserve = READ_ONCE(pgdat->totalreserve_pages);
	m->file = umm_pgdat_state(pgdat, NR_ACTIVE_FILE) +
		  umm_pgdat_state(pgdat, NR_INACTIVE_FILE);
	/* the node array counts the _B items in pages, as meminfo shows */
	m->slab = umm_pgdat_state(pgdat, NR_SLAB_RECLAIMABLE_B) +
		  umm_pgdat_state(pgdat, NR_KERNEL_MISC_RECLAIMABLE);
}

/**
 * umm_mm_kobj_get() - /sys/kernel/mm, with a reference.
 *
 * mm_kobj is exported by 6.1, not by 6.12; Kbuild probes Module.symvers.
 * Without the export the directory is found by name under /sys/kernel,
 * and its kobject is the kernfs node's private pointer (kernfs_node.priv,
 * 6.12): the one way to it a module has there.
 *
 * Return: the kobject, or NULL.
 */
struct kobject *umm_mm_kobj_get(void)
{
#ifdef UMM_HAVE_MM_KOBJ
	return kobject_get(mm_kobj);
#else
	struct kobject *kobj = NULL;
	struct kernfs_node *kn;

	kn = kernfs_find_and_get(kernel_kobj->sd, "mm");
	if (!kn)
		return NULL;
	if (kernfs_type(kn) == KERNFS_DIR && kn->priv)
		kobj = kobject_get(kn->priv);
	kernfs_put(kn);
	return kobj;
#endif
}

#ifdef CONFIG_MEMCG

/**
 * umm_memcg_counts() - a memory cgroup's usage and limit, in pages.
 * @m:		the cgroup.
 * @usage:	its usage, page cache included (memory.current).
 *
 * mem_cgroup_usage() is static in both kernels: mem_cgroup.memory is read
 * as a field (struct page_counter, same in 6.1 and 6.12).
 *
 * Return: the lower of memory.max and memory.high.
 */
unsigned long umm_memcg_counts(struct mem_cgroup *m, unsigned long *usage)
{
	*usage = page_counter_read(&m->memory);
	return min(READ_ONCE(m->memory.max), READ_ONCE(m->memory.high));
}

#ifdef CONFIG_LRU_GEN
/*
 * The multi-gen LRU (on by default in 6.12, built but off in 6.1) keeps
 * its folios off the classic lists and counts them per generation in
 * lru_gen_folio.nr_pages[] (lru_gen_struct in 6.1: same field); the
 * kernel's inactive_file is every generation but the two youngest, as
 * lru_gen_is_active() says.
 */
static long umm_lrugen_inactive_file(struct lruvec *lruvec, int z)
{
	long pages = 0;
	int gen;

	for (gen = 0; gen < MAX_NR_GENS; gen++)
		if (!lru_gen_is_active(lruvec, gen))
			pages += READ_ONCE(lruvec->lrugen.nr_pages[gen]
					   [LRU_GEN_FILE][z]);
	return pages;
}
#else
static long umm_lrugen_inactive_file(struct lruvec *lruvec, int z)
{
	return 0;
}
#endif

/*
 * A cgroup's own inactive file pages (its children's not included).
 * memcg_page_state() and the memcg statistics are private to
 * mm/memcontrol.c on 6.12 and flushed only every 2 s on 6.1; the LRU
 * sizes are exact and in the headers of both: the classic lists'
 * (mem_cgroup_get_zone_lru_size()) and the multi-gen LRU's, of which one
 * is empty while the other is in use. mem_cgroup_per_node is reached as
 * mem_cgroup.nodeinfo[] (6.1, 6.12): mem_cgroup_lruvec() would name
 * root_mem_cgroup, which modules cannot link.
 */
static unsigned long umm_memcg_own_inactive_file(struct mem_cgroup *m)
{
	long pages = 0;
	int nid, z;

	for_each_node_state(nid, N_MEMORY) {
		struct lruvec *lruvec = &m->nodeinfo[nid]->lruvec;

		for (z = 0; z < MAX_NR_ZONES; z++)
			pages += mem_cgroup_get_zone_lru_size(lruvec,
							      LRU_INACTIVE_FILE,
							      z) +
				 umm_lrugen_inactive_file(lruvec, z);
	}
	return pages > 0 ? pages : 0;
}

/**
 * umm_memcg_inactive_file() - inactive file pages of a cgroup and every
 * cgroup below it (they are all charged to its memory.current).
 * @m:		the cgroup; the caller holds a reference on it or below it.
 *
 * Context: takes rcu_read_lock(); the walk grows with the cgroups below.
 * Return: pages.
 */
unsigned long umm_memcg_inactive_file(struct mem_cgroup *m)
{
	struct cgroup_subsys_state *css;
	unsigned long pages = 0;

	rcu_read_lock();
	css_for_each_descendant_pre(css, &m->css)
		pages += umm_memcg_own_inactive_file(mem_cgroup_from_css(css));
	rcu_read_unlock();
	return pages;
}

#endif /* CONFIG_MEMCG */
