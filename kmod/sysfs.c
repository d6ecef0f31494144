// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/mm/umm: global knobs and figures, nodes/node<N>/,
 * gpus/gpu<N>/ and cgroup/ (the thresholds of every watched memory cgroup). One value per file, units in the names, knobs 0600,
 * figures 0400, inject 0200; a bad write fails with -EINVAL and changes
 * nothing. Documentation/ABI/testing/sysfs-kernel-mm-umm describes each file.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/kobject.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/nodemask.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "umm_internal.h"

#define UMM_DEF_LOW_BP		2000
#define UMM_DEF_MEDIUM_BP	1000
#define UMM_DEF_CRITICAL_BP	500

static struct kobject *umm_kobj;
static struct kobject *umm_nodes_kobj;
static struct kobject *umm_gpus_kobj;
static struct kobject *umm_cgroup_kobj;

/* ---- global knobs ------------------------------------------------------ */

static ssize_t enabled_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%d\n", READ_ONCE(umm.enabled));
}

/*
 * A boolean as the directory's rule states it: a whole word (1 y yes on
 * true, 0 n no off false, any case) or a number that is 0 or 1. Not
 * kstrtobool(), which reads the first letter only: it took "yellow" as
 * yes and the number 0x1 as no.
 */
static int umm_parse_bool(const char *buf, bool *on)
{
	static const char *const words[] = { "0", "n", "no", "off", "false",
					     "1", "y", "yes", "on", "true" };
	char word[24];
	size_t len = strlen(buf);
	unsigned int i;
	u64 v;

	if (len && buf[len - 1] == '\n')
		len--;
	if (!len || len >= sizeof(word))
		return -EINVAL;
	memcpy(word, buf, len);
	word[len] = '\0';
	for (i = 0; i < ARRAY_SIZE(words); i++) {
		if (!strcasecmp(word, words[i])) {
			*on = i >= ARRAY_SIZE(words) / 2;
			return 0;
		}
	}
	if (umm_parse_u64(word, &v) || v > 1)
		return -EINVAL;
	*on = v;
	return 0;
}

static ssize_t enabled_store(struct kobject *kobj, struct kobj_attribute *attr,
			     const char *buf, size_t count)
{
	bool on;

	if (umm_parse_bool(buf, &on))
		return -EINVAL;
	mutex_lock(&umm.mutex);
	umm_set_enabled(on);
	mutex_unlock(&umm.mutex);
	return count;
}

static int umm_store_u32(const char *buf, u32 min, u32 max, u32 *val)
{
	u32 v;

	if (umm_parse_u32(buf, &v) || v < min || v > max)
		return -EINVAL;
	mutex_lock(&umm.mutex);
	WRITE_ONCE(*val, v);
	mutex_unlock(&umm.mutex);
	return 0;
}

/* A u32 knob of struct umm_state with its accepted range. */
#define UMM_U32_KNOB(_name, _field, _min, _max)				\
static ssize_t _name##_show(struct kobject *kobj,			\
			    struct kobj_attribute *attr, char *buf)	\
{									\
	return sysfs_emit(buf, "%u\n", READ_ONCE(umm._field));		\
}									\
static ssize_t _name##_store(struct kobject *kobj,			\
			     struct kobj_attribute *attr,		\
			     const char *buf, size_t count)		\
{									\
	int ret = umm_store_u32(buf, _min, _max, &umm._field);		\
									\
	return ret ? ret : count;					\
}

UMM_U32_KNOB(queue_len, queue_len, UMM_QUEUE_LEN_MIN, UMM_QUEUE_LEN_MAX)
UMM_U32_KNOB(hysteresis_bp, hysteresis_bp, 0, 5000)
UMM_U32_KNOB(event_min_interval_ms, min_interval_ms, 0, 60000)
UMM_U32_KNOB(repeat_interval_ms, repeat_ms, 0, 3600000)
UMM_U32_KNOB(oom_wait_ms, oom_wait_ms, 0, 10000)

static ssize_t interval_ms_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(umm.interval_ms));
}

static ssize_t interval_ms_store(struct kobject *kobj,
				 struct kobj_attribute *attr,
				 const char *buf, size_t count)
{
	u32 v;

	if (umm_parse_u32(buf, &v) || v < 10 || v > 60000)
		return -EINVAL;
	mutex_lock(&umm.mutex);
	umm.interval_ms = v;
	umm_monitor_kick();
	mutex_unlock(&umm.mutex);
	return count;
}

static ssize_t ring_bytes_max_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", READ_ONCE(umm.ring_bytes_max));
}

static ssize_t ring_bytes_max_store(struct kobject *kobj,
				    struct kobj_attribute *attr,
				    const char *buf, size_t count)
{
	u64 v;

	if (umm_parse_u64(buf, &v) || v < UMM_RING_BYTES_MIN ||
	    v > UMM_RING_BYTES_MAX)
		return -EINVAL;
	/* opens compare against it without a lock: they may see either */
	WRITE_ONCE(umm.ring_bytes_max, v);
	return count;
}

static ssize_t inject_store(struct kobject *kobj, struct kobj_attribute *attr,
			    const char *buf, size_t count)
{
	int ret = umm_inject(buf);

	return ret ? ret : count;
}

/* ---- global figures ------------------------------------------------------ */

#define UMM_STAT64(_name, _field)					\
static ssize_t _name##_show(struct kobject *kobj,			\
			    struct kobj_attribute *attr, char *buf)	\
{									\
	return sysfs_emit(buf, "%llu\n",				\
			  (u64)atomic64_read(&umm.stats._field));	\
}

UMM_STAT64(events_sent, events_sent)
UMM_STAT64(events_dropped, events_dropped)
UMM_STAT64(overflows, overflows)
UMM_STAT64(acks, acks)
UMM_STAT64(bytes_freed, bytes_freed)
UMM_STAT64(ack_latency_ns_max, ack_latency_max_ns)
UMM_STAT64(shrinker_calls, shrinker_calls)
UMM_STAT64(oom_calls, oom_calls)
UMM_STAT64(oom_deferred, oom_deferred)
UMM_STAT64(ring_bytes, ring_bytes)

static ssize_t clients_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&umm.stats.clients));
}

static ssize_t ack_latency_ns_avg_show(struct kobject *kobj,
				       struct kobj_attribute *attr, char *buf)
{
	u64 n = atomic64_read(&umm.stats.ack_latency_count);
	u64 sum = atomic64_read(&umm.stats.ack_latency_sum_ns);

	return sysfs_emit(buf, "%llu\n", n ? div64_u64(sum, n) : 0);
}

static ssize_t api_version_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", UMM_API_VERSION);
}

#define UMM_KNOB(_name)	__ATTR(_name, 0600, _name##_show, _name##_store)
#define UMM_FIGURE(_name) __ATTR(_name, 0400, _name##_show, NULL)

static struct kobj_attribute umm_attrs[] = {
	UMM_KNOB(enabled),
	UMM_KNOB(interval_ms),
	UMM_KNOB(queue_len),
	UMM_KNOB(ring_bytes_max),
	UMM_KNOB(hysteresis_bp),
	UMM_KNOB(event_min_interval_ms),
	UMM_KNOB(repeat_interval_ms),
	UMM_KNOB(oom_wait_ms),
	__ATTR(inject, 0200, NULL, inject_store),
	UMM_FIGURE(api_version),
	UMM_FIGURE(clients),
	UMM_FIGURE(events_sent),
	UMM_FIGURE(events_dropped),
	UMM_FIGURE(overflows),
	UMM_FIGURE(acks),
	UMM_FIGURE(bytes_freed),
	UMM_FIGURE(ack_latency_ns_avg),
	UMM_FIGURE(ack_latency_ns_max),
	UMM_FIGURE(shrinker_calls),
	UMM_FIGURE(oom_calls),
	UMM_FIGURE(oom_deferred),
	UMM_FIGURE(ring_bytes),
};

static struct attribute *umm_attr_ptrs[ARRAY_SIZE(umm_attrs) + 1];

static const struct attribute_group umm_group = {
	.attrs = umm_attr_ptrs,
};

/* ---- nodes/node<N> --------------------------------------------------- */

static struct umm_node *to_node(struct kobject *kobj)
{
	return container_of(kobj, struct umm_node, kobj);
}

static ssize_t umm_wm_store(struct umm_node *n, u32 *field, const char *buf,
			    size_t count)
{
	u32 v, low, medium, crit;
	int ret;

	if (umm_parse_u32(buf, &v))
		return -EINVAL;
	mutex_lock(&umm.mutex);
	low = field == &n->low_bp ? v : n->low_bp;
	medium = field == &n->medium_bp ? v : n->medium_bp;
	crit = field == &n->critical_bp ? v : n->critical_bp;
	ret = umm_node_check_wm(low, medium, crit);
	if (!ret) {
		WRITE_ONCE(*field, v);
		umm_monitor_kick();
	}
	mutex_unlock(&umm.mutex);
	return ret ? ret : count;
}

#define UMM_WM_KNOB(_name)						\
static ssize_t _name##_show(struct kobject *kobj,			\
			    struct kobj_attribute *attr, char *buf)	\
{									\
	return sysfs_emit(buf, "%u\n", READ_ONCE(to_node(kobj)->_name));\
}									\
static ssize_t _name##_store(struct kobject *kobj,			\
			     struct kobj_attribute *attr,		\
			     const char *buf, size_t count)		\
{									\
	struct umm_node *n = to_node(kobj);				\
									\
	return umm_wm_store(n, &n->_name, buf, count);			\
}									\
static struct kobj_attribute node_##_name##_attr = UMM_KNOB(_name)

UMM_WM_KNOB(low_bp);
UMM_WM_KNOB(medium_bp);
UMM_WM_KNOB(critical_bp);

#define UMM_NODE_FIGURE(_name, _fmt, _expr)				\
static ssize_t node_##_name##_show(struct kobject *kobj,		\
				   struct kobj_attribute *attr,		\
				   char *buf)				\
{									\
	struct umm_node *n = to_node(kobj);				\
									\
	return sysfs_emit(buf, _fmt "\n", _expr);			\
}									\
static struct kobj_attribute node_##_name##_attr =			\
	__ATTR(_name, 0400, node_##_name##_show, NULL)

UMM_NODE_FIGURE(level, "%s", umm_level_name(READ_ONCE(n->src.level)));
UMM_NODE_FIGURE(free_bytes, "%llu", READ_ONCE(n->free_bytes));
UMM_NODE_FIGURE(available_bytes, "%llu", READ_ONCE(n->avail_bytes));
UMM_NODE_FIGURE(total_bytes, "%llu", READ_ONCE(n->total_bytes));
UMM_NODE_FIGURE(resident_bytes, "%llu", umm_sum_read(&n->src.resident));
UMM_NODE_FIGURE(reclaimable_bytes, "%llu",
		umm_sum_read(&n->src.reclaimable));
UMM_NODE_FIGURE(eta_ms, "%u", READ_ONCE(n->eta_ms));
UMM_NODE_FIGURE(critical_effective_bytes, "%llu",
		umm_node_critical_bytes(n));
UMM_NODE_FIGURE(events, "%llu", (u64)atomic64_read(&n->src.events));

static struct attribute *umm_node_attrs[] = {
	&node_low_bp_attr.attr,
	&node_medium_bp_attr.attr,
	&node_critical_bp_attr.attr,
	&node_critical_effective_bytes_attr.attr,
	&node_level_attr.attr,
	&node_free_bytes_attr.attr,
	&node_available_bytes_attr.attr,
	&node_total_bytes_attr.attr,
	&node_resident_bytes_attr.attr,
	&node_reclaimable_bytes_attr.attr,
	&node_eta_ms_attr.attr,
	&node_events_attr.attr,
	NULL,
};
ATTRIBUTE_GROUPS(umm_node);

static void umm_node_release(struct kobject *kobj)
{
	kfree(to_node(kobj));
}

static const struct kobj_type umm_node_ktype = {
	.release	= umm_node_release,
	.sysfs_ops	= &kobj_sysfs_ops,
	.default_groups	= umm_node_groups,
};

/* ---- gpus/gpu<N> ----------------------------------------------------- */

static struct umm_gpu *to_gpu(struct kobject *kobj)
{
	return container_of(kobj, struct umm_gpu, kobj);
}

static ssize_t budget_bytes_show(struct kobject *kobj,
				 struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", READ_ONCE(to_gpu(kobj)->budget_bytes));
}

static ssize_t budget_bytes_store(struct kobject *kobj,
				  struct kobj_attribute *attr,
				  const char *buf, size_t count)
{
	struct umm_gpu *g = to_gpu(kobj);
	u64 v;

	if (umm_parse_u64(buf, &v))
		return -EINVAL;
	mutex_lock(&umm.mutex);
	WRITE_ONCE(g->budget_bytes, v);
	umm_gpu_check(g, false);
	mutex_unlock(&umm.mutex);
	return count;
}

static struct kobj_attribute gpu_budget_bytes_attr = UMM_KNOB(budget_bytes);

#define UMM_GPU_FIGURE(_name, _fmt, _expr)				\
static ssize_t gpu_##_name##_show(struct kobject *kobj,		\
				  struct kobj_attribute *attr,		\
				  char *buf)				\
{									\
	struct umm_gpu *g = to_gpu(kobj);				\
									\
	return sysfs_emit(buf, _fmt "\n", _expr);			\
}									\
static struct kobj_attribute gpu_##_name##_attr =			\
	__ATTR(_name, 0400, gpu_##_name##_show, NULL)

UMM_GPU_FIGURE(level, "%s", umm_level_name(READ_ONCE(g->src.level)));
UMM_GPU_FIGURE(used_bytes, "%llu", umm_sum_read(&g->src.resident));
UMM_GPU_FIGURE(reclaimable_bytes, "%llu",
	       umm_sum_read(&g->src.reclaimable));
UMM_GPU_FIGURE(events, "%llu", (u64)atomic64_read(&g->src.events));

static struct attribute *umm_gpu_attrs[] = {
	&gpu_budget_bytes_attr.attr,
	&gpu_level_attr.attr,
	&gpu_used_bytes_attr.attr,
	&gpu_reclaimable_bytes_attr.attr,
	&gpu_events_attr.attr,
	NULL,
};
ATTRIBUTE_GROUPS(umm_gpu);

static void umm_gpu_release(struct kobject *kobj)
{
	kfree(to_gpu(kobj));
}

static const struct kobj_type umm_gpu_ktype = {
	.release	= umm_gpu_release,
	.sysfs_ops	= &kobj_sysfs_ops,
	.default_groups	= umm_gpu_groups,
};

/* ---- cgroup/ ---------------------------------------------------------- */

/* As for a node's watermarks: low > medium > critical, low <= 10000. */
static ssize_t umm_cg_wm_store(u32 *field, const char *buf, size_t count)
{
	u32 v, low, medium, crit;
	int ret;

	if (umm_parse_u32(buf, &v))
		return -EINVAL;
	mutex_lock(&umm.mutex);
	low = field == &umm.cg_low_bp ? v : umm.cg_low_bp;
	medium = field == &umm.cg_medium_bp ? v : umm.cg_medium_bp;
	crit = field == &umm.cg_critical_bp ? v : umm.cg_critical_bp;
	ret = umm_node_check_wm(low, medium, crit);
	if (!ret) {
		WRITE_ONCE(*field, v);
		umm_monitor_kick();
	}
	mutex_unlock(&umm.mutex);
	return ret ? ret : count;
}

#define UMM_CG_WM_KNOB(_name)						\
static ssize_t cg_##_name##_show(struct kobject *kobj,			\
				 struct kobj_attribute *attr, char *buf)\
{									\
	return sysfs_emit(buf, "%u\n", READ_ONCE(umm.cg_##_name));	\
}									\
static ssize_t cg_##_name##_store(struct kobject *kobj,		\
				  struct kobj_attribute *attr,		\
				  const char *buf, size_t count)	\
{									\
	return umm_cg_wm_store(&umm.cg_##_name, buf, count);		\
}									\
static struct kobj_attribute cg_##_name##_attr =			\
	__ATTR(_name, 0600, cg_##_name##_show, cg_##_name##_store)

UMM_CG_WM_KNOB(low_bp);
UMM_CG_WM_KNOB(medium_bp);
UMM_CG_WM_KNOB(critical_bp);

static ssize_t cg_watched_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(umm.nr_cgroups));
}

static struct kobj_attribute cg_watched_attr =
	__ATTR(watched, 0400, cg_watched_show, NULL);

static struct attribute *umm_cg_attrs[] = {
	&cg_low_bp_attr.attr,
	&cg_medium_bp_attr.attr,
	&cg_critical_bp_attr.attr,
	&cg_watched_attr.attr,
	NULL,
};

static const struct attribute_group umm_cg_group = {
	.attrs = umm_cg_attrs,
};

/* ---- setup ----------------------------------------------------------- */

static int umm_add_node(int nid)
{
	struct umm_node *n;
	int ret;

	n = kzalloc(sizeof(*n), GFP_KERNEL);
	if (!n)
		return -ENOMEM;
	n->nid = nid;
	n->low_bp = UMM_DEF_LOW_BP;
	n->medium_bp = UMM_DEF_MEDIUM_BP;
	n->critical_bp = UMM_DEF_CRITICAL_BP;
	n->eta_ms = UMM_ETA_UNKNOWN;
	n->src.level = UMM_LEVEL_NORMAL;
	n->src.announced = UMM_LEVEL_NORMAL;
	atomic64_set(&n->src.events, 0);
	ret = kobject_init_and_add(&n->kobj, &umm_node_ktype, umm_nodes_kobj,
				   "node%d", nid);
	if (ret) {
		kobject_put(&n->kobj);	/* frees n */
		return ret;
	}
	umm.nodes[nid] = n;
	return 0;
}

static int umm_add_gpu(u32 id)
{
	struct umm_gpu *g;
	int ret;

	g = kzalloc(sizeof(*g), GFP_KERNEL);
	if (!g)
		return -ENOMEM;
	g->id = id;
	g->src.level = UMM_LEVEL_NORMAL;
	g->src.announced = UMM_LEVEL_NORMAL;
	atomic64_set(&g->src.events, 0);
	ret = kobject_init_and_add(&g->kobj, &umm_gpu_ktype, umm_gpus_kobj,
				   "gpu%u", id);
	if (ret) {
		kobject_put(&g->kobj);	/* frees g */
		return ret;
	}
	umm.gpus[id] = g;
	return 0;
}

/*
 * Remove every node and GPU directory first: kobject_del() waits for the
 * reads and writes of their files in flight and no new one can start. A
 * budget_bytes write walks umm.nodes[] (to name a destination node), so
 * freeing a node while any GPU file was still writable let that write read
 * freed memory. Only then are the pointers cleared, under the mutex, and
 * the objects freed.
 */
static void umm_put_sources(void)
{
	int nid, i;

	for (nid = 0; nid < nr_node_ids; nid++)
		if (umm.nodes[nid])
			kobject_del(&umm.nodes[nid]->kobj);
	for (i = 0; i < UMM_MAX_GPUS; i++)
		if (umm.gpus[i])
			kobject_del(&umm.gpus[i]->kobj);

	/* no file is left to wait for: the releases only free memory */
	mutex_lock(&umm.mutex);
	for (nid = 0; nid < nr_node_ids; nid++) {
		if (umm.nodes[nid])
			kobject_put(&umm.nodes[nid]->kobj);
		umm.nodes[nid] = NULL;
	}
	for (i = 0; i < UMM_MAX_GPUS; i++) {
		if (umm.gpus[i])
			kobject_put(&umm.gpus[i]->kobj);
		umm.gpus[i] = NULL;
	}
	mutex_unlock(&umm.mutex);
}

/**
 * umm_sysfs_init() - create /sys/kernel/mm/umm with a directory (and the
 * state behind it) for every node with memory and every GPU id.
 *
 * Context: module load, before anything else can reach the sources.
 * Return: 0 or a negative errno; nothing is left behind on failure.
 */
int umm_sysfs_init(void)
{
	struct kobject *mm;
	int nid, i, ret;

	for (i = 0; i < ARRAY_SIZE(umm_attrs); i++)
		umm_attr_ptrs[i] = &umm_attrs[i].attr;

	mm = umm_mm_kobj_get();
	if (!mm) {
		pr_err("/sys/kernel/mm not found\n");
		return -ENOENT;
	}
	umm_kobj = kobject_create_and_add("umm", mm);
	kobject_put(mm);	/* umm_kobj holds its parent now */
	if (!umm_kobj)
		return -ENOMEM;
	umm_nodes_kobj = kobject_create_and_add("nodes", umm_kobj);
	if (!umm_nodes_kobj) {
		ret = -ENOMEM;
		goto put_umm;
	}
	umm_gpus_kobj = kobject_create_and_add("gpus", umm_kobj);
	if (!umm_gpus_kobj) {
		ret = -ENOMEM;
		goto put_nodes;
	}
	umm_cgroup_kobj = kobject_create_and_add("cgroup", umm_kobj);
	if (!umm_cgroup_kobj) {
		ret = -ENOMEM;
		goto put_gpus;
	}
	ret = sysfs_create_group(umm_cgroup_kobj, &umm_cg_group);
	if (ret)
		goto put_cgroup;
	for_each_node_state(nid, N_MEMORY) {
		ret = umm_add_node(nid);
		if (ret)
			goto put_sources;
	}
	for (i = 0; i < UMM_MAX_GPUS; i++) {
		ret = umm_add_gpu(i);
		if (ret)
			goto put_sources;
	}
	ret = sysfs_create_group(umm_kobj, &umm_group);
	if (ret)
		goto put_sources;
	return 0;

put_sources:
	umm_put_sources();
	sysfs_remove_group(umm_cgroup_kobj, &umm_cg_group);
put_cgroup:
	kobject_put(umm_cgroup_kobj);
put_gpus:
	kobject_put(umm_gpus_kobj);
put_nodes:
	kobject_put(umm_nodes_kobj);
put_umm:
	kobject_put(umm_kobj);
	return ret;
}

/**
 * umm_sysfs_exit() - remove /sys/kernel/mm/umm and free the node and GPU
 * state. The sampling work, the shrinker and every client are gone by then.
 */
void umm_sysfs_exit(void)
{
	sysfs_remove_group(umm_kobj, &umm_group);
	umm_put_sources();
	sysfs_remove_group(umm_cgroup_kobj, &umm_cg_group);
	kobject_put(umm_cgroup_kobj);
	kobject_put(umm_gpus_kobj);
	kobject_put(umm_nodes_kobj);
	kobject_put(umm_kobj);
}
