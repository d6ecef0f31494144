// SPDX-License-Identifier: MIT
/*
 * metrics.c - umctl metrics: umm.ko's figures in the Prometheus text
 * exposition format, for node_exporter's textfile collector (the systemd
 * units in tools/umctl/systemd/ write it every 15 s).
 *
 * Names carry their unit (_bytes, _seconds, _ratio) and counters end in
 * _total, as Prometheus' naming rules ask; the kernel's milliseconds,
 * nanoseconds and basis points are converted. Module-wide, umm.ko keeps the
 * ACK latency as a sum and a count and exposes only their ratio and the
 * maximum, exported as two gauges; per client it also counts latencies into
 * fixed buckets, exported as a histogram (clients of a module that does not
 * have no histogram: none is invented). Watched memory cgroups are labelled
 * by their path, a number of series a host bounds only by its jobs: the 64
 * with the least room get series of their own, the rest are summed into
 * cgroup="_other" (cgroup_series()).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "umctl.h"
#include "ut.h"

/* NS_MEAN: nanoseconds, a mean of the ACKs: NaN (no value) before one */
enum scale { AS_IS, MS_TO_S, NS_TO_S, NS_MEAN, BP_TO_RATIO };

/* A family whose value is one field of the module, a node, a GPU. */
struct field_metric {
	const char *name, *type, *help;
	int field;
	enum scale scale;
};

#define G(f)	UT_UMM_G_##f
static const struct field_metric module_metrics[] = {
	{ "umm_events_enabled", "gauge",
	  "1 when umm.ko sends pressure events (the enabled knob).",
	  G(enabled), AS_IS },
	{ "umm_clients", "gauge", "Processes that have /dev/umm open.",
	  G(clients), AS_IS },
	{ "umm_ring_bytes", "gauge",
	  "Bytes the event rings of the open clients take, charged to their openers' memory cgroups.",
	  G(ring_bytes), AS_IS },
	{ "umm_ring_max_bytes", "gauge",
	  "Bytes all event rings together may take; an open of /dev/umm past it fails with ENOBUFS (the ring_bytes_max knob).",
	  G(ring_bytes_max), AS_IS },
	{ "umm_events_sent_total", "counter",
	  "Pressure events queued to clients.", G(events_sent), AS_IS },
	{ "umm_events_dropped_total", "counter",
	  "Events lost because a client's ring was full.",
	  G(events_dropped), AS_IS },
	{ "umm_overflow_records_total", "counter",
	  "OVERFLOW records queued to clients (one per run of drops a client had not read yet).",
	  G(overflows), AS_IS },
	{ "umm_acks_total", "counter", "ACKs clients sent for events.",
	  G(acks), AS_IS },
	{ "umm_freed_bytes_total", "counter",
	  "Bytes clients said they freed in their ACKs.", G(bytes_freed),
	  AS_IS },
	{ "umm_ack_latency_mean_seconds", "gauge",
	  "Mean time from an event to its ACK since umm.ko was loaded, NaN before the first (umm.ko keeps a sum and a count, no histogram).",
	  G(ack_latency_ns_avg), NS_MEAN },
	{ "umm_ack_latency_max_seconds", "gauge",
	  "Longest time from an event to its ACK since umm.ko was loaded.",
	  G(ack_latency_ns_max), NS_TO_S },
	{ "umm_shrinker_calls_total", "counter",
	  "Calls of umm.ko's shrinker by kernel reclaim.",
	  G(shrinker_calls), AS_IS },
	{ "umm_oom_notifier_calls_total", "counter",
	  "Calls of umm.ko's OOM notifier.", G(oom_calls), AS_IS },
	{ "umm_oom_deferred_total", "counter",
	  "OOM kills umm.ko's OOM notifier put off while clients gave memory back.",
	  G(oom_deferred), AS_IS },
	{ "umm_sampling_interval_seconds", "gauge",
	  "How often umm.ko samples the nodes (the interval_ms knob).",
	  G(interval_ms), MS_TO_S },
};
#undef G

#define N(f)	UT_UMM_N_##f
static const struct field_metric node_metrics[] = {
	{ "umm_node_free_bytes", "gauge", "Free memory of the node.",
	  N(free_bytes), AS_IS },
	{ "umm_node_total_bytes", "gauge", "Memory of the node.",
	  N(total_bytes), AS_IS },
	{ "umm_node_critical_effective_bytes", "gauge",
	  "Free memory below which the node is critical, as umm.ko applies it.",
	  N(critical_effective_bytes), AS_IS },
	{ "umm_node_resident_bytes", "gauge",
	  "Bytes umm.ko's clients hold on the node.", N(resident_bytes),
	  AS_IS },
	{ "umm_node_reclaimable_bytes", "gauge",
	  "Bytes umm.ko's clients hold on the node and could give back.",
	  N(reclaimable_bytes), AS_IS },
	{ "umm_node_events_total", "counter",
	  "Pressure events about the node.", N(events), AS_IS },
};
#undef N

#define U(f)	UT_UMM_GPU_##f
static const struct field_metric gpu_metrics[] = {
	{ "umm_gpu_budget_bytes", "gauge",
	  "The GPU's memory budget; 0 when it has none.", U(budget_bytes),
	  AS_IS },
	{ "umm_gpu_used_bytes", "gauge",
	  "Bytes umm.ko's clients hold on the GPU.", U(used_bytes), AS_IS },
	{ "umm_gpu_reclaimable_bytes", "gauge",
	  "Bytes umm.ko's clients hold on the GPU and could give back.",
	  U(reclaimable_bytes), AS_IS },
	{ "umm_gpu_events_total", "counter",
	  "Pressure events about the GPU.", U(events), AS_IS },
};
#undef U

/* Client figures, by the field of struct ut_umm_client they show. */
enum client_field {
	C_PRIORITY, C_READY, C_QUEUE_LEN, C_QUEUED, C_EVENTS, C_DROPS,
	C_ACKS, C_FREED, C_ACK_NS,
};

static const struct field_metric client_metrics[] = {
	{ "umm_client_priority", "gauge",
	  "The client's priority: lower values are asked to free memory first.",
	  C_PRIORITY, AS_IS },
	{ "umm_client_ready", "gauge",
	  "1 when the client has finished its handshake.", C_READY, AS_IS },
	{ "umm_client_ring_capacity_events", "gauge",
	  "Events the client's ring holds.", C_QUEUE_LEN, AS_IS },
	{ "umm_client_queued_events", "gauge",
	  "Events waiting in the client's ring.", C_QUEUED, AS_IS },
	{ "umm_client_events_total", "counter",
	  "Pressure events sent to the client.", C_EVENTS, AS_IS },
	{ "umm_client_dropped_events_total", "counter",
	  "Events lost because the client's ring was full.", C_DROPS,
	  AS_IS },
	{ "umm_client_acks_total", "counter", "ACKs the client sent.",
	  C_ACKS, AS_IS },
	{ "umm_client_freed_bytes_total", "counter",
	  "Bytes the client said it freed in its ACKs.", C_FREED, AS_IS },
	{ "umm_client_ack_latency_mean_seconds", "gauge",
	  "Mean time from an event to the client's ACK, NaN before its first (umm.ko keeps a sum and a count, no histogram).",
	  C_ACK_NS, NS_MEAN },
};

/* Cgroup figures, by the field of struct ut_umm_cgroup they show. */
enum cgroup_field { CG_USAGE, CG_LIMIT, CG_ROOM, CG_CLIENTS, CG_EVENTS,
		    CG_COUNT };

static const struct field_metric cgroup_metrics[] = {
	{ "umm_cgroup_usage_bytes", "gauge",
	  "Memory the cgroup uses (its memory.current).", CG_USAGE, AS_IS },
	{ "umm_cgroup_limit_bytes", "gauge",
	  "The cgroup's effective limit, the lowest memory.max or memory.high on its path to the root; +Inf without one.",
	  CG_LIMIT, AS_IS },
	{ "umm_cgroup_room_bytes", "gauge",
	  "Bytes left under the cgroup's limits, the least under any on its path (siblings' usage counts under a parent's); +Inf without a limit.",
	  CG_ROOM, AS_IS },
	{ "umm_cgroup_clients", "gauge",
	  "Clients of /dev/umm tied to the cgroup.", CG_CLIENTS, AS_IS },
	{ "umm_cgroup_events_total", "counter",
	  "Pressure events about the cgroup (cgroup=\"_other\" falls when a cgroup leaves it).",
	  CG_EVENTS, AS_IS },
};

#define COUNT(a)	(sizeof(a) / sizeof((a)[0]))
/* Cgroups with series of their own; the rest are cgroup="_other". */
#define CGROUP_SERIES	64
/* cgroup="<path>": each byte of a path is at most 5 of the label (\\xNN) */
#define CG_LABELS	(sizeof(((struct ut_umm_cgroup *)0)->path) * 5 + 16)
#define LABELS		512	/* pid, an escaped name of 31 bytes, a tier */

static const char *const levels[] = { "normal", "low", "medium", "critical" };

static double scaled(uint64_t v, enum scale s)
{
	switch (s) {
	case MS_TO_S:
		return (double)v / 1e3;
	case NS_TO_S:
	case NS_MEAN:
		return (double)v / 1e9;
	case BP_TO_RATIO:
		return (double)v / 1e4;
	default:
		return (double)v;
	}
}

/* acks: how many ACKs the mean (NS_MEAN) is of. */
static void sample(FILE *f, const struct field_metric *m, const char *labels,
		   uint64_t v, uint64_t acks)
{
	if (m->scale == AS_IS)
		ut_prom_u64(f, m->name, labels, v);
	else if (m->scale == NS_MEAN && !acks)
		ut_prom_dbl(f, m->name, labels, NAN);
	else
		ut_prom_dbl(f, m->name, labels, scaled(v, m->scale));
}

/* 0 normal .. 3 critical; NaN for a level this umctl does not know. */
static double level_value(const char *level)
{
	size_t i;

	for (i = 0; i < COUNT(levels); i++)
		if (!strcmp(level, levels[i]))
			return (double)i;
	return NAN;
}

static void id_label(char *buf, const char *key, unsigned int id)
{
	char num[16];

	snprintf(num, sizeof(num), "%u", id);
	buf[0] = '\0';
	ut_prom_label(buf, LABELS, key, num);
}

static void module_families(FILE *f, const struct ut_umm *s)
{
	char labels[LABELS] = "", api[24];
	size_t i;

	ut_prom_family(f, "umm_info", "gauge",
		       "Always 1; the labels say which umm.ko API is loaded.");
	snprintf(api, sizeof(api), "%llu",
		 (unsigned long long)s->g[UT_UMM_G_api_version]);
	ut_prom_label(labels, sizeof(labels), "api_version", api);
	ut_prom_u64(f, "umm_info", labels, 1);
	for (i = 0; i < COUNT(module_metrics); i++) {
		const struct field_metric *m = &module_metrics[i];

		ut_prom_family(f, m->name, m->type, m->help);
		sample(f, m, "", s->g[m->field], s->g[UT_UMM_G_acks]);
	}
}

/* A node or a GPU as the writer sees it. */
struct entity {
	unsigned int id;
	const char *level;
	const uint64_t *v;
};

/* umm_KIND_level and the field families of every node or every GPU. */
static void entity_families(FILE *f, const char *kind, const struct entity *e,
			    size_t n, const struct field_metric *m, size_t nm)
{
	char name[64], help[128], labels[LABELS];
	size_t i, k;

	snprintf(name, sizeof(name), "umm_%s_level", kind);
	snprintf(help, sizeof(help),
		 "The %s's pressure level: 0 normal, 1 low, 2 medium, 3 critical.",
		 kind);
	ut_prom_family(f, name, "gauge", help);
	for (i = 0; i < n; i++) {
		id_label(labels, kind, e[i].id);
		ut_prom_dbl(f, name, labels, level_value(e[i].level));
	}
	for (k = 0; k < nm; k++) {
		ut_prom_family(f, m[k].name, m[k].type, m[k].help);
		for (i = 0; i < n; i++) {
			id_label(labels, kind, e[i].id);
			sample(f, &m[k], labels, e[i].v[m[k].field], 0);
		}
	}
}

static void node_watermarks(FILE *f, const struct ut_umm *s)
{
	static const int wm[] = { UT_UMM_N_low_bp, UT_UMM_N_medium_bp,
				  UT_UMM_N_critical_bp };
	char labels[LABELS];
	size_t i, w;

	ut_prom_family(f, "umm_node_watermark_ratio", "gauge",
		       "Fraction of the node's memory below which free memory puts it at the level named by the watermark label.");
	for (i = 0; i < s->nnodes; i++)
		for (w = 0; w < COUNT(wm); w++) {
			id_label(labels, "node", s->nodes[i].id);
			ut_prom_label(labels, sizeof(labels), "watermark",
				      levels[w + 1]);
			ut_prom_dbl(f, "umm_node_watermark_ratio", labels,
				    scaled(s->nodes[i].v[wm[w]], BP_TO_RATIO));
		}
}

static void node_eta(FILE *f, const struct ut_umm *s)
{
	char labels[LABELS];
	uint64_t ms;
	size_t i;

	ut_prom_family(f, "umm_node_critical_eta_seconds", "gauge",
		       "umm.ko's estimate of the time until the node is critical at the present decline; +Inf when free memory is not falling.");
	for (i = 0; i < s->nnodes; i++) {
		ms = s->nodes[i].v[UT_UMM_N_eta_ms];
		id_label(labels, "node", s->nodes[i].id);
		ut_prom_dbl(f, "umm_node_critical_eta_seconds", labels,
			    ms >= UT_UMM_ETA_NONE ? INFINITY : (double)ms / 1e3);
	}
}

static void node_families(FILE *f, const struct ut_umm *s,
			  const struct entity *e)
{
	entity_families(f, "node", e, s->nnodes, node_metrics,
			COUNT(node_metrics));
	node_watermarks(f, s);
	node_eta(f, s);
}

/* Every field but the priority, which is signed. */
static uint64_t client_value(const struct ut_umm_client *c, int field)
{
	switch (field) {
	case C_READY:
		return (uint64_t)c->ready;
	case C_QUEUE_LEN:
		return c->queue_len;
	case C_QUEUED:
		return c->queued;
	case C_EVENTS:
		return c->events;
	case C_DROPS:
		return c->drops;
	case C_ACKS:
		return c->acks;
	case C_FREED:
		return c->bytes_freed;
	default:
		return c->ack_ns_avg;
	}
}

/*
 * name="umtrain",slot="0": a client's labels, its name escaped. Not the
 * pid: every restart of a trainer would start new series. slot tells apart
 * clients of one name (0, 1, ... in pid order); umm_client_info maps both
 * to the pid.
 */
static void client_labels(char *buf, const struct ut_umm_client *c,
			  unsigned int slot)
{
	char sl[16];

	snprintf(sl, sizeof(sl), "%u", slot);
	buf[0] = '\0';
	ut_prom_label(buf, LABELS, "name", c->name);
	ut_prom_label(buf, LABELS, "slot", sl);
}

static int by_name_pid(const void *a, const void *b, void *arg)
{
	const struct ut_umm_client *c = arg;
	const struct ut_umm_client *x = &c[*(const size_t *)a];
	const struct ut_umm_client *y = &c[*(const size_t *)b];
	int d = strcmp(x->name, y->name);

	return d ? d : (x->pid > y->pid) - (x->pid < y->pid);
}

/*
 * slot[i]: how many clients of c[i]'s name have a lower pid. Sorted by
 * (name, pid), not compared pairwise: the module takes tens of thousands
 * of clients.
 */
static unsigned int *client_slots(const struct ut_umm_client *c, size_t n)
{
	unsigned int *slot = calloc(n ? n : 1, sizeof(*slot));
	size_t *order = calloc(n ? n : 1, sizeof(*order));
	size_t i;

	if (!slot || !order) {
		free(slot);
		free(order);
		return NULL;
	}
	for (i = 0; i < n; i++)
		order[i] = i;
	qsort_r(order, n, sizeof(*order), by_name_pid, (void *)c);
	for (i = 1; i < n; i++)
		if (!strcmp(c[order[i]].name, c[order[i - 1]].name))
			slot[order[i]] = slot[order[i - 1]] + 1;
	free(order);
	return slot;
}

static void client_books(FILE *f, const struct ut_umm_client *c, size_t n,
			 const unsigned int *slot, bool resident)
{
	const char *name = resident ? "umm_client_resident_bytes" :
				      "umm_client_reclaimable_bytes";
	struct ut_umm_book b[UT_UMM_MAX_BOOKS];
	char labels[LABELS];
	size_t i;
	int k, nb;

	ut_prom_family(f, name, "gauge", resident ?
		       "Bytes the client holds in the tier (a node or a GPU), as it reported them to umm.ko." :
		       "Bytes the client holds in the tier and could give back.");
	for (i = 0; i < n; i++) {
		nb = ut_umm_books(c[i].books, b, UT_UMM_MAX_BOOKS);
		for (k = 0; k < nb; k++) {
			client_labels(labels, &c[i], slot[i]);
			ut_prom_label(labels, sizeof(labels), "tier",
				      b[k].tier);
			ut_prom_u64(f, name, labels, resident ?
				    b[k].resident : b[k].reclaimable);
		}
	}
}

static void client_ack_histogram(FILE *f, const struct ut_umm_client *c,
				 size_t n, const unsigned int *slot)
{
	const char *name = "umm_client_ack_latency_seconds";
	char labels[LABELS], le[32], metric[64];
	uint64_t cum;
	size_t i;
	int b;

	ut_prom_family(f, name, "histogram",
		       "Time from an event to the client's ACK of it.");
	for (i = 0; i < n; i++) {
		if (!c[i].hist)
			continue;
		snprintf(metric, sizeof(metric), "%s_bucket", name);
		for (b = 0, cum = 0; b < UT_UMM_ACK_BUCKETS; b++) {
			cum += c[i].ack_ms_le[b];
			if (b < UT_UMM_ACK_BUCKETS - 1)
				snprintf(le, sizeof(le), "%g",
					 ut_umm_ack_le_ms[b] / 1e3);
			else
				snprintf(le, sizeof(le), "+Inf");
			client_labels(labels, &c[i], slot[i]);
			ut_prom_label(labels, sizeof(labels), "le", le);
			ut_prom_u64(f, metric, labels, cum);
		}
		client_labels(labels, &c[i], slot[i]);
		snprintf(metric, sizeof(metric), "%s_sum", name);
		ut_prom_dbl(f, metric, labels, c[i].ack_ns_sum / 1e9);
		snprintf(metric, sizeof(metric), "%s_count", name);
		ut_prom_u64(f, metric, labels, cum);
	}
}

static void client_info(FILE *f, const struct ut_umm_client *c, size_t n,
			const unsigned int *slot)
{
	char labels[LABELS], pid[16];
	size_t i;

	ut_prom_family(f, "umm_client_info", "gauge",
		       "1 per client: its pid, for the name and slot that label its series.");
	for (i = 0; i < n; i++) {
		client_labels(labels, &c[i], slot[i]);
		snprintf(pid, sizeof(pid), "%d", c[i].pid);
		ut_prom_label(labels, sizeof(labels), "pid", pid);
		ut_prom_u64(f, "umm_client_info", labels, 1);
	}
}

static void client_families(FILE *f, const struct ut_umm_client *c,
			    size_t n)
{
	unsigned int *slot = client_slots(c, n);
	char labels[LABELS];
	size_t i, k;

	if (!slot)
		return;
	client_info(f, c, n, slot);
	for (k = 0; k < COUNT(client_metrics); k++) {
		const struct field_metric *m = &client_metrics[k];

		ut_prom_family(f, m->name, m->type, m->help);
		for (i = 0; i < n; i++) {
			client_labels(labels, &c[i], slot[i]);
			if (m->field == C_PRIORITY)
				ut_prom_dbl(f, m->name, labels, c[i].priority);
			else
				sample(f, m, labels,
				       client_value(&c[i], m->field), c[i].acks);
		}
	}
	client_books(f, c, n, slot, true);
	client_books(f, c, n, slot, false);
	client_ack_histogram(f, c, n, slot);
	free(slot);
}

/* Which cgroups get series of their own, and the sums of the others. */
struct cgroup_series {
	size_t own[CGROUP_SERIES];	/* indexes, the least room first */
	size_t nown, nother;
	uint64_t sum[CG_COUNT];		/* the others' (saturating) */
	double limit;			/* their limits; +Inf if one has none */
};

static uint64_t cgroup_value(const struct ut_umm_cgroup *c, int field)
{
	switch (field) {
	case CG_USAGE:
		return c->usage;
	case CG_LIMIT:
		return c->limit;
	case CG_ROOM:
		return c->room;
	case CG_CLIENTS:
		return c->clients;
	default:
		return c->events;
	}
}

static int by_room_path(const void *a, const void *b, void *arg)
{
	const struct ut_umm_cgroup *c = arg;
	const struct ut_umm_cgroup *x = &c[*(const size_t *)a];
	const struct ut_umm_cgroup *y = &c[*(const size_t *)b];

	if (x->room != y->room)
		return x->room < y->room ? -1 : 1;
	return strcmp(x->path, y->path);
}

static bool path_taken(const struct cgroup_series *cs,
		       const struct ut_umm_cgroup *c, const char *path)
{
	size_t i;

	for (i = 0; i < cs->nown; i++)
		if (!strcmp(c[cs->own[i]].path, path))
			return true;
	return false;
}

static void add_other(struct cgroup_series *cs, const struct ut_umm_cgroup *c)
{
	int k;

	for (k = 0; k < CG_COUNT; k++) {
		uint64_t v = cgroup_value(c, k);

		cs->sum[k] = cs->sum[k] > UINT64_MAX - v ? UINT64_MAX :
			     cs->sum[k] + v;
	}
	cs->limit += c->limit == UT_UMM_NO_LIMIT ? INFINITY : (double)c->limit;
	cs->nother++;
}

/*
 * Series of their own for the CGROUP_SERIES cgroups with the least room,
 * the ones an admin needs to see, by path; the rest go to cgroup="_other".
 * So does a path seen twice (a cgroup removed and made again while the old
 * one is still watched): two series with one label would spoil the file.
 */
static int cgroup_series(const struct ut_umm_cgroup *c, size_t n,
			 struct cgroup_series *cs)
{
	size_t *order = calloc(n ? n : 1, sizeof(*order));
	size_t i;

	memset(cs, 0, sizeof(*cs));
	if (!order)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		order[i] = i;
	qsort_r(order, n, sizeof(*order), by_room_path, (void *)c);
	for (i = 0; i < n; i++) {
		const struct ut_umm_cgroup *g = &c[order[i]];

		if (cs->nown < CGROUP_SERIES && !path_taken(cs, c, g->path))
			cs->own[cs->nown++] = order[i];
		else
			add_other(cs, g);
	}
	free(order);
	return 0;
}

/* A figure of a cgroup; a limit or room of none is +Inf. */
static void cgroup_sample(FILE *f, const struct field_metric *m,
			  const char *labels, uint64_t v)
{
	if ((m->field == CG_LIMIT || m->field == CG_ROOM) &&
	    v == UT_UMM_NO_LIMIT)
		ut_prom_dbl(f, m->name, labels, INFINITY);
	else
		ut_prom_u64(f, m->name, labels, v);
}

/* The others' sums; the room and the level of a sum would mean nothing. */
static void other_sample(FILE *f, const struct field_metric *m,
			 const struct cgroup_series *cs)
{
	const char *labels = "cgroup=\"_other\"";

	if (!cs->nother || m->field == CG_ROOM)
		return;
	if (m->field == CG_LIMIT)
		ut_prom_dbl(f, m->name, labels, cs->limit);
	else
		ut_prom_u64(f, m->name, labels, cs->sum[m->field]);
}

static void cgroup_label(char *buf, const struct ut_umm_cgroup *c)
{
	buf[0] = '\0';
	ut_prom_label(buf, CG_LABELS, "cgroup", c->path);
}

static void cgroup_families(FILE *f, const struct ut_umm_cgroup *c,
			    const struct cgroup_series *cs)
{
	char labels[CG_LABELS];
	size_t i, k;

	ut_prom_family(f, "umm_cgroup_level", "gauge",
		       "The cgroup's pressure level: 0 normal, 1 low, 2 medium, 3 critical.");
	for (i = 0; i < cs->nown; i++) {
		cgroup_label(labels, &c[cs->own[i]]);
		ut_prom_dbl(f, "umm_cgroup_level", labels,
			    level_value(c[cs->own[i]].level));
	}
	for (k = 0; k < COUNT(cgroup_metrics); k++) {
		const struct field_metric *m = &cgroup_metrics[k];

		ut_prom_family(f, m->name, m->type, m->help);
		for (i = 0; i < cs->nown; i++) {
			cgroup_label(labels, &c[cs->own[i]]);
			cgroup_sample(f, m, labels,
				      cgroup_value(&c[cs->own[i]], m->field));
		}
		other_sample(f, m, cs);
	}
}

/* What one run of umctl metrics shows. */
struct snapshot {
	bool loaded;
	struct ut_umm s;
	struct entity *nodes;		/* s's, for entity_families */
	struct entity gpus[UT_UMM_MAX_GPUS];
	int clients_err;		/* 0, or why there is no table */
	struct ut_umm_client *c;
	size_t nc;
	int cgroups_err;		/* the same for the cgroup table */
	struct ut_umm_cgroup *cg;
	size_t ncg;
	struct cgroup_series cs;
};

static void write_metrics(FILE *f, const struct snapshot *x)
{
	ut_prom_family(f, "umm_up", "gauge",
		       "1 when umm.ko is loaded and its files were read, 0 when it is not loaded.");
	ut_prom_u64(f, "umm_up", "", x->loaded);
	if (!x->loaded)
		return;
	module_families(f, &x->s);
	node_families(f, &x->s, x->nodes);
	entity_families(f, "gpu", x->gpus, x->s.ngpus, gpu_metrics,
			COUNT(gpu_metrics));
	ut_prom_family(f, "umm_client_table_readable", "gauge",
		       "1 when the debugfs client table could be read; 0, and no umm_client_ series, when not (debugfs not mounted, not root).");
	ut_prom_u64(f, "umm_client_table_readable", "", !x->clients_err);
	client_families(f, x->c, x->nc);
	if (x->s.has_cgroup) {
		ut_prom_family(f, "umm_cgroups_watched", "gauge",
			       "Memory cgroups umm.ko watches (cgroup/watched), those in cgroup=\"_other\" too.");
		ut_prom_u64(f, "umm_cgroups_watched", "",
			    x->s.cg[UT_UMM_CG_watched]);
	}
	ut_prom_family(f, "umm_cgroup_table_readable", "gauge",
		       "1 when the debugfs cgroup table could be read; 0, and no other umm_cgroup_ series, when not.");
	ut_prom_u64(f, "umm_cgroup_table_readable", "", !x->cgroups_err);
	cgroup_families(f, x->cg, &x->cs);
}

/* The nodes and GPUs of x->s as entities. */
static int entities(struct snapshot *x)
{
	const struct ut_umm *s = &x->s;
	size_t i;

	x->nodes = calloc(s->nnodes ? s->nnodes : 1, sizeof(*x->nodes));
	if (!x->nodes)
		return -ENOMEM;
	for (i = 0; i < s->nnodes; i++)
		x->nodes[i] = (struct entity){ s->nodes[i].id,
					       s->nodes[i].level,
					       s->nodes[i].v };
	for (i = 0; i < s->ngpus; i++)
		x->gpus[i] = (struct entity){ s->gpus[i].id, s->gpus[i].level,
					      s->gpus[i].v };
	return 0;
}

/*
 * Reads the tree and the client table. umm.ko not loaded is a fact to
 * export (umm_up 0); a tree that cannot be read is an error, said here.
 */
static int take(const struct umctl *u, struct snapshot *x)
{
	int ret = ut_umm_read(u->root, &x->s);

	x->loaded = !ret;
	if (ret && ret != -ENOENT) {
		ut_umm_warn(u->root, x->s.failed[0] ? x->s.failed : "metrics",
			    ret);
		return EX_RUNTIME;
	}
	if (!x->loaded)
		return EX_DONE;
	x->clients_err = ut_umm_clients(u->root, &x->c, &x->nc);
	x->cgroups_err = ut_umm_cgroups(u->root, &x->cg, &x->ncg);
	if (!x->cgroups_err && cgroup_series(x->cg, x->ncg, &x->cs))
		return umctl_fail("metrics", -ENOMEM);
	return entities(x) ? umctl_fail("metrics", -ENOMEM) : EX_DONE;
}

/*
 * To path as a whole: a temporary file in the same directory (a name that
 * does not end in .prom, which the textfile collector skips), then renamed
 * over path, so a reader sees the old file or the new one, never half.
 */
static int write_atomically(const char *path, const struct snapshot *x)
{
	char tmp[4096];
	FILE *f;
	int fd, ret = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >=
	    sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkstemp(tmp);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		ret = -errno;
		close(fd);
		unlink(tmp);
		return ret;
	}
	write_metrics(f, x);
	errno = 0;
	if (fflush(f) || ferror(f) || fchmod(fd, 0644) || fsync(fd))
		ret = errno ? -errno : -EIO;
	if (fclose(f) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}

int cmd_metrics(struct umctl *u, int argc, char **argv)
{
	struct snapshot x = { 0 };
	int ret;

	if (argc > 2)
		ut_die_usage("metrics: unexpected argument '%s'", argv[2]);
	if (u->json)
		ut_die_usage("metrics: its output is the Prometheus text format; --json does not apply");
	ret = take(u, &x);
	if (!ret && argc == 1) {
		write_metrics(stdout, &x);
		if (fflush(stdout))
			ret = umctl_fail("metrics", -errno);
	} else if (!ret) {
		ret = write_atomically(argv[1], &x);
		if (ret)
			ret = umctl_fail(argv[1], ret);
	}
	free(x.nodes);
	free(x.c);
	free(x.cg);
	ut_umm_free(&x.s);
	return ret;
}
