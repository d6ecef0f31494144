// SPDX-License-Identifier: GPL-2.0
/*
 * <debugfs>/umm/: clients (one line per open file of /dev/umm), cgroups
 * (one line per watched memory cgroup) and sample (what sampling costs),
 * for root only (debugfs itself is root-only; the files are 0400).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cgroup.h>
#include <linux/debugfs.h>
#include <linux/math64.h>
#include <linux/memcontrol.h>
#include <linux/pid.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "umm_internal.h"

static struct dentry *umm_debugfs_dir;

/*
 * A client's name is one word of the row: before the handshake it is the
 * opener's comm, which may hold anything (prctl(PR_SET_NAME, "x\n4242 ...")
 * would add a row), and a handshake name may hold blanks. Every byte that
 * is not printable, a blank or a backslash is written as \ooo, as
 * /proc/mounts does.
 */
static void umm_show_word(struct seq_file *m, const char *name, size_t max)
{
	size_t i, len = strnlen(name, max);

	for (i = 0; i < len; i++) {
		u8 b = name[i];

		if (b > ' ' && b < 0x7f && b != '\\')
			seq_putc(m, b);
		else
			seq_printf(m, "\\%03o", b);
	}
}

static void umm_show_name(struct seq_file *m, const char *name)
{
	umm_show_word(m, name, UMM_NAME_LEN);
}

static void umm_show_books(struct seq_file *m, struct umm_client *c)
{
	struct umm_node *n;
	bool any = false;
	int nid, i;

	for_each_umm_node(n, nid) {
		if (!c->nodes[nid].resident)
			continue;
		seq_printf(m, "%snode%d:%llu/%llu", any ? "," : " ", nid,
			   c->nodes[nid].resident, c->nodes[nid].reclaimable);
		any = true;
	}
	for (i = 0; i < UMM_MAX_GPUS; i++) {
		if (!c->gpus[i].resident)
			continue;
		seq_printf(m, "%sgpu%d:%llu/%llu", any ? "," : " ", i,
			   c->gpus[i].resident, c->gpus[i].reclaimable);
		any = true;
	}
	if (!any)
		seq_puts(m, " -");
}

static void umm_show_client(struct seq_file *m, struct umm_client *c)
{
	u64 events, drops, acks, freed, lat, lat_sum;
	u64 le[UMM_ACK_BUCKETS];
	u32 queued;
	int i;

	spin_lock(&c->ring_lock);
	queued = c->used;
	events = c->events;
	drops = c->drops;
	acks = c->acks;
	freed = c->bytes_freed;
	lat = c->ack_ns_n ? div64_u64(c->ack_ns_sum, c->ack_ns_n) : 0;
	lat_sum = c->ack_ns_sum;
	memcpy(le, c->ack_ms_le, sizeof(le));
	spin_unlock(&c->ring_lock);
	seq_printf(m, "%d ", pid_nr(c->pid));
	umm_show_name(m, c->name);
	seq_printf(m, " %d %d %u %u %llu %llu %llu %llu %llu",
		   c->priority, c->ready, c->queue_len, queued, events,
		   drops, acks, freed, lat);
	umm_show_books(m, c);
	seq_printf(m, " %llu ", lat_sum);
	for (i = 0; i < UMM_ACK_BUCKETS; i++)
		seq_printf(m, "%s%llu", i ? "," : "", le[i]);
	seq_putc(m, '\n');
}

/* The clients in the order they are asked, then those not ready yet. */
static int clients_show(struct seq_file *m, void *unused)
{
	struct umm_client *c;
	int i;

	seq_puts(m, "pid name priority ready queue_len queued events drops acks bytes_freed ack_ns_avg tiers(resident/reclaimable) ack_ns_sum ack_ms_le(");
	for (i = 0; i < UMM_ACK_BUCKETS - 1; i++)
		seq_printf(m, "%u,", umm_ack_le_ms[i]);
	seq_puts(m, "inf)\n");
	mutex_lock(&umm.mutex);
	list_for_each_entry(c, &umm.clients, list)
		umm_show_client(m, c);
	list_for_each_entry(c, &umm.unready, list)
		umm_show_client(m, c);
	mutex_unlock(&umm.mutex);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(clients);

/*
 * One line per watched cgroup. The path is relative to the cgroup2 root
 * (as /proc/<pid>/cgroup shows it) and written as one word, like a name.
 */
static int cgroups_show(struct seq_file *m, void *unused)
{
	struct umm_cgroup *cg;
	char *path;

	path = kmalloc(PATH_MAX, GFP_KERNEL);
	if (!path)
		return -ENOMEM;
	seq_puts(m, "id path usage_bytes limit_bytes room_bytes level clients eta_ms fill_bps events\n");
	mutex_lock(&umm.mutex);
	list_for_each_entry(cg, &umm.cgroups, list) {
		if (cgroup_path(cg->memcg->css.cgroup, path, PATH_MAX) < 0)
			strscpy(path, "?", PATH_MAX);
		seq_printf(m, "%llu ", cg->id);
		umm_show_word(m, path, PATH_MAX);
		seq_printf(m, " %llu %llu %llu %s %u %u %lld %llu\n",
			   cg->usage_bytes, cg->limit_bytes, cg->room_bytes,
			   umm_level_name(cg->src.level), cg->clients,
			   cg->eta_ms, cg->fill_bps,
			   (u64)atomic64_read(&cg->src.events));
	}
	mutex_unlock(&umm.mutex);
	kfree(path);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(cgroups);

/* What sampling costs: one line of figures, their names above. */
static int sample_show(struct seq_file *m, void *unused)
{
	mutex_lock(&umm.mutex);
	seq_puts(m, "samples ns_sum ns_avg ns_max ns_last next_ms cgroups fill_peak_bps late_ns_max late_samples\n");
	seq_printf(m, "%llu %llu %llu %llu %llu %u %u %llu %llu %llu\n",
		   umm.samples, umm.sample_ns_sum,
		   umm.samples ? div64_u64(umm.sample_ns_sum, umm.samples) : 0,
		   umm.sample_ns_max, umm.sample_ns_last, umm.next_ms_last,
		   umm.nr_cgroups, umm.fill_peak_bps, umm.late_ns_max,
		   umm.late_samples);
	mutex_unlock(&umm.mutex);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(sample);

/**
 * umm_debugfs_init() - create <debugfs>/umm/{clients,cgroups,sample}.
 * Failure is not fatal (debugfs may be absent); nothing depends on it.
 */
void umm_debugfs_init(void)
{
	umm_debugfs_dir = debugfs_create_dir("umm", NULL);
	debugfs_create_file("clients", 0400, umm_debugfs_dir, NULL,
			    &clients_fops);
	debugfs_create_file("cgroups", 0400, umm_debugfs_dir, NULL,
			    &cgroups_fops);
	debugfs_create_file("sample", 0400, umm_debugfs_dir, NULL,
			    &sample_fops);
}

/**
 * umm_debugfs_exit() - remove <debugfs>/umm.
 */
void umm_debugfs_exit(void)
{
	debugfs_remove_recursive(umm_debugfs_dir);
}
