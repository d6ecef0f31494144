// SPDX-License-Identifier: MIT
/*
 * umm_show.c - umm.ko's figures as JSON and as tables, shared by umctl and
 * umtop so both say the same thing the same way.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ut.h"

/* Each file's value under its file name: the JSON keys are the ABI's. */
static void json_fields(struct ut_json *j, const char *const *names,
			const uint64_t *v, int count)
{
	int i;

	for (i = 0; i < count; i++)
		ut_json_u64(j, names[i], v[i]);
}

void ut_umm_json(struct ut_json *j, const struct ut_umm *s,
		 const double *decline)
{
	size_t i;

	ut_json_obj_begin(j, "module");
	ut_json_bool(j, "loaded", true);
	json_fields(j, ut_umm_global_names, s->g, UT_UMM_G_COUNT);
	ut_json_obj_end(j);
	ut_json_arr_begin(j, "nodes");
	for (i = 0; i < s->nnodes; i++) {
		ut_json_obj_begin(j, NULL);
		ut_json_u64(j, "node", s->nodes[i].id);
		ut_json_str(j, "level", s->nodes[i].level);
		json_fields(j, ut_umm_node_names, s->nodes[i].v,
			    UT_UMM_N_COUNT);
		if (decline)
			ut_json_dbl(j, "free_decline_bytes_per_s", decline[i]);
		ut_json_obj_end(j);
	}
	ut_json_arr_end(j);
	ut_json_arr_begin(j, "gpus");
	for (i = 0; i < s->ngpus; i++) {
		ut_json_obj_begin(j, NULL);
		ut_json_u64(j, "gpu", s->gpus[i].id);
		ut_json_str(j, "level", s->gpus[i].level);
		json_fields(j, ut_umm_gpu_names, s->gpus[i].v,
			    UT_UMM_GPU_COUNT);
		ut_json_obj_end(j);
	}
	ut_json_arr_end(j);
	if (s->has_cgroup) {
		ut_json_obj_begin(j, "cgroup");
		json_fields(j, ut_umm_cgroup_names, s->cg, UT_UMM_CG_COUNT);
		ut_json_obj_end(j);
	}
}

int ut_umm_books(const char *books, struct ut_umm_book *b, int max)
{
	char copy[sizeof(((struct ut_umm_client *)0)->books)];
	unsigned long long res, recl;
	char *save, *t;
	int n = 0;

	snprintf(copy, sizeof(copy), "%s", books);
	for (t = strtok_r(copy, ",", &save); t && n < max;
	     t = strtok_r(NULL, ",", &save)) {
		if (sscanf(t, "%15[a-z0-9]:%llu/%llu", b[n].tier, &res,
			   &recl) != 3)
			continue;	/* "-": no books */
		b[n].resident = res;
		b[n].reclaimable = recl;
		n++;
	}
	return n;
}

/* "node0:1/2,gpu1:3/4" as [{"tier": "node0", ...}, ...]; "-" as []. */
static void json_books(struct ut_json *j, const char *books)
{
	struct ut_umm_book b[UT_UMM_MAX_BOOKS];
	int i, n = ut_umm_books(books, b, UT_UMM_MAX_BOOKS);

	ut_json_arr_begin(j, "books");
	for (i = 0; i < n; i++) {
		ut_json_obj_begin(j, NULL);
		ut_json_str(j, "tier", b[i].tier);
		ut_json_u64(j, "resident_bytes", b[i].resident);
		ut_json_u64(j, "reclaimable_bytes", b[i].reclaimable);
		ut_json_obj_end(j);
	}
	ut_json_arr_end(j);
}

/* The latency sum and the count per bucket (not cumulative), as umm.ko. */
static void json_ack_buckets(struct ut_json *j, const struct ut_umm_client *c)
{
	int b;

	ut_json_u64(j, "ack_ns_sum", c->ack_ns_sum);
	ut_json_arr_begin(j, "ack_ms_le");
	for (b = 0; b < UT_UMM_ACK_BUCKETS; b++)
		ut_json_u64(j, NULL, c->ack_ms_le[b]);
	ut_json_arr_end(j);
}

void ut_umm_json_clients(struct ut_json *j, const char *key,
			 const struct ut_umm_client *c, size_t n)
{
	size_t i;

	ut_json_arr_begin(j, key);
	for (i = 0; i < n; i++) {
		ut_json_obj_begin(j, NULL);
		ut_json_i64(j, "pid", c[i].pid);
		ut_json_str(j, "name", c[i].name);
		ut_json_i64(j, "priority", c[i].priority);
		ut_json_bool(j, "ready", c[i].ready);
		ut_json_u64(j, "queue_len", c[i].queue_len);
		ut_json_u64(j, "queued", c[i].queued);
		ut_json_u64(j, "events", c[i].events);
		ut_json_u64(j, "drops", c[i].drops);
		ut_json_u64(j, "acks", c[i].acks);
		ut_json_u64(j, "bytes_freed", c[i].bytes_freed);
		ut_json_u64(j, "ack_ns_avg", c[i].ack_ns_avg);
		json_books(j, c[i].books);
		if (c[i].hist)
			json_ack_buckets(j, &c[i]);
		ut_json_obj_end(j);
	}
	ut_json_arr_end(j);
}

void ut_umm_json_cgroups(struct ut_json *j, const char *key,
			 const struct ut_umm_cgroup *c, size_t n)
{
	size_t i;

	ut_json_arr_begin(j, key);
	for (i = 0; i < n; i++) {
		ut_json_obj_begin(j, NULL);
		ut_json_u64(j, "id", c[i].id);
		ut_json_str(j, "path", c[i].path);
		ut_json_u64(j, "usage_bytes", c[i].usage);
		ut_json_u64(j, "limit_bytes", c[i].limit);
		ut_json_u64(j, "room_bytes", c[i].room);
		ut_json_str(j, "level", c[i].level);
		ut_json_u64(j, "clients", c[i].clients);
		ut_json_u64(j, "eta_ms", c[i].eta_ms);
		ut_json_i64(j, "fill_bps", c[i].fill_bps);
		ut_json_u64(j, "events", c[i].events);
		ut_json_obj_end(j);
	}
	ut_json_arr_end(j);
}

/* ---- tables -------------------------------------------------------------- */

int ut_table_rowf(struct libscols_table *tb, int ncols, ...)
{
	const char *cells[32];
	va_list ap;
	int i;

	if (ncols > 32 || ncols != ut_table_ncols(tb))
		return -EINVAL;
	va_start(ap, ncols);
	for (i = 0; i < ncols; i++)
		cells[i] = va_arg(ap, const char *);
	va_end(ap);
	return ut_table_row(tb, cells);
}

#define CELL	32

static void u64_str(uint64_t v, char buf[CELL])
{
	snprintf(buf, CELL, "%" PRIu64, v);
}

/*
 * eta_ms as "12.3s", "4m05s", "3h12m" or "30d12h" (a slow decline reads
 * as days, not 2636400.4s); "-" when the node is not falling.
 */
static void eta_str(uint64_t ms, char buf[CELL])
{
	uint64_t s = ms / 1000;

	if (ms >= UT_UMM_ETA_NONE)
		snprintf(buf, CELL, "-");
	else if (s < 60)
		snprintf(buf, CELL, "%.1fs", (double)ms / 1000.0);
	else if (s < 3600)
		snprintf(buf, CELL, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, CELL, "%" PRIu64 "h%02" PRIu64 "m", s / 3600,
			 s / 60 % 60);
	else
		snprintf(buf, CELL, "%" PRIu64 "d%02" PRIu64 "h", s / 86400,
			 s / 3600 % 24);
}

/* A share as "67.1%"; far over its whole (a tiny budget) as ">999%". */
static void pct_str(uint64_t part, uint64_t whole, char buf[CELL])
{
	double pct = whole ? 100.0 * (double)part / (double)whole : 0.0;

	if (pct >= 999.95)
		snprintf(buf, CELL, ">999%%");
	else
		snprintf(buf, CELL, "%.1f%%", pct);
}

/* Bytes per second as "12 MiB/s" or "-12 MiB/s"; unknown (NaN) as "-". */
static void rate_str(double bps, char buf[CELL])
{
	char sz[UT_SIZE_STR];

	if (isnan(bps))
		snprintf(buf, CELL, "-");
	else if (bps == 0)
		snprintf(buf, CELL, "0");
	else
		snprintf(buf, CELL, "%s%s/s", bps < 0 ? "-" : "",
			 ut_size_str((uint64_t)fabs(bps), sz));
}

/* ncols: 11 with the DECLINE column, 10 without (the last cell unused). */
static int node_row(struct libscols_table *tb, int ncols,
		    const struct ut_umm_node *n, double decline)
{
	char id[CELL], freep[CELL], eta[CELL], ev[CELL], rate[CELL];
	char f[UT_SIZE_STR], t[UT_SIZE_STR], c[UT_SIZE_STR];
	char r[UT_SIZE_STR], rc[UT_SIZE_STR];
	const uint64_t *v = n->v;

	snprintf(id, CELL, "node%u", n->id);
	pct_str(v[UT_UMM_N_free_bytes], v[UT_UMM_N_total_bytes], freep);
	eta_str(v[UT_UMM_N_eta_ms], eta);
	u64_str(v[UT_UMM_N_events], ev);
	rate_str(decline, rate);
	return ut_table_rowf(tb, ncols, id, n->level,
			     ut_size_str(v[UT_UMM_N_free_bytes], f),
			     ut_size_str(v[UT_UMM_N_total_bytes], t), freep,
			     ut_size_str(v[UT_UMM_N_critical_effective_bytes],
					 c),
			     eta, ut_size_str(v[UT_UMM_N_resident_bytes], r),
			     ut_size_str(v[UT_UMM_N_reclaimable_bytes], rc),
			     ev, rate);
}

/* ut_umm_fit's width and what it hid ("nodes: A B; gpus: C"). */
static struct {
	int cols;
	char hidden[256];
} fit;

void ut_umm_fit(int cols)
{
	fit.cols = cols;
	fit.hidden[0] = '\0';
}

const char *ut_umm_fit_hidden(void)
{
	return fit.hidden;
}

/*
 * Prints tb (what: the table's name, prio: its columns' priorities, the
 * lowest hidden first on a narrow screen), or frees it when filling it
 * failed (ret).
 */
static int print_or_free(struct libscols_table *tb, int ret, const char *what,
			 const unsigned char *prio)
{
	char hid[128] = "";
	size_t used = strlen(fit.hidden);

	if (ret) {
		ut_table_free(tb);
		return ret;
	}
	if (!fit.cols)
		return ut_table_print(tb);
	ret = ut_table_print_fit(tb, fit.cols, prio, hid, sizeof(hid));
	if (hid[0])
		snprintf(fit.hidden + used, sizeof(fit.hidden) - used,
			 "%s%s: %s", used ? "; " : "", what, hid);
	return ret;
}

int ut_umm_print_nodes(const struct ut_umm *s, const double *decline)
{
	static const char *const cols[] = {
		"NODE", "LEVEL", "FREE", "TOTAL", "FREE%", "CRIT-EFF", "ETA",
		"RESIDENT", "RECLAIMABLE", "EVENTS", "DECLINE",
	};
	/* what is left at 60 columns: the node, its level, free, ETA */
	static const unsigned char prio[] = {
		9, 8, 8, 3, 6, 2, 7, 4, 1, 2, 5,
	};
	struct libscols_table *tb;
	size_t i;
	int ret = 0;

	int ncols = decline ? 11 : 10;

	tb = ut_table_new(cols, ncols, 0x7fc);
	if (!tb)
		return -ENOMEM;
	for (i = 0; i < s->nnodes && !ret; i++)
		ret = node_row(tb, ncols, &s->nodes[i],
			       decline ? decline[i] : 0);
	return print_or_free(tb, ret, "nodes", prio);
}

static bool gpu_active(const struct ut_umm_gpu *g)
{
	return g->v[UT_UMM_GPU_budget_bytes] || g->v[UT_UMM_GPU_used_bytes] ||
	       g->v[UT_UMM_GPU_reclaimable_bytes] ||
	       g->v[UT_UMM_GPU_events] || strcmp(g->level, "normal");
}

static int gpu_row(struct libscols_table *tb, const struct ut_umm_gpu *g)
{
	char id[CELL], ev[CELL], used[CELL];
	char b[UT_SIZE_STR], u[UT_SIZE_STR], r[UT_SIZE_STR];
	const uint64_t *v = g->v;

	snprintf(id, CELL, "gpu%u", g->id);
	u64_str(v[UT_UMM_GPU_events], ev);
	if (v[UT_UMM_GPU_budget_bytes])
		pct_str(v[UT_UMM_GPU_used_bytes], v[UT_UMM_GPU_budget_bytes],
			used);
	else
		snprintf(used, CELL, "-");
	return ut_table_rowf(tb, 7, id, g->level,
			     v[UT_UMM_GPU_budget_bytes] ?
			     ut_size_str(v[UT_UMM_GPU_budget_bytes], b) : "none",
			     ut_size_str(v[UT_UMM_GPU_used_bytes], u), used,
			     ut_size_str(v[UT_UMM_GPU_reclaimable_bytes], r), ev);
}

int ut_umm_print_gpus(const struct ut_umm *s, bool all)
{
	static const char *const cols[] = {
		"GPU", "LEVEL", "BUDGET", "USED", "USED%", "RECLAIMABLE",
		"EVENTS",
	};
	static const unsigned char prio[] = { 9, 8, 7, 7, 6, 3, 2 };
	struct libscols_table *tb;
	size_t i, shown = 0;
	int ret = 0;

	tb = ut_table_new(cols, 7, 0x7c);
	if (!tb)
		return -ENOMEM;
	for (i = 0; i < s->ngpus && !ret; i++) {
		if (!all && !gpu_active(&s->gpus[i]))
			continue;
		ret = gpu_row(tb, &s->gpus[i]);
		shown++;
	}
	if (!shown) {
		/* nothing to say: no header without rows */
		ut_table_free(tb);
		return 0;
	}
	return print_or_free(tb, ret, "gpus", prio);
}

/*
 * The BOOKS cell: "node0:64 MiB/32 MiB,gpu1:1 MiB/0 B" (resident/
 * reclaimable per tier) from the module's bytes; "-" for none.
 */
static void books_str(const char *books, char *buf, size_t len)
{
	struct ut_umm_book b[UT_UMM_MAX_BOOKS];
	char r[UT_SIZE_STR], c[UT_SIZE_STR];
	int n = ut_umm_books(books, b, UT_UMM_MAX_BOOKS);
	size_t used = 0;

	snprintf(buf, len, "-");
	for (int i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s:%s/%s",
					 i ? "," : "", b[i].tier,
					 ut_size_str(b[i].resident, r),
					 ut_size_str(b[i].reclaimable, c));
}

static int client_row(struct libscols_table *tb, const struct ut_umm_client *c)
{
	char n[7][CELL], fr[UT_SIZE_STR], lat[CELL];
	char books[sizeof(c->books) * 2];

	snprintf(n[0], CELL, "%d", c->pid);
	snprintf(n[1], CELL, "%d", c->priority);
	u64_str(c->queue_len, n[2]);
	u64_str(c->queued, n[3]);
	u64_str(c->events, n[4]);
	u64_str(c->drops, n[5]);
	u64_str(c->acks, n[6]);
	snprintf(lat, CELL, "%.3fms", (double)c->ack_ns_avg / 1e6);
	books_str(c->books, books, sizeof(books));
	return ut_table_rowf(tb, 12, n[0], c->name, n[1],
			     c->ready ? "yes" : "no", n[2], n[3], n[4], n[5],
			     n[6], ut_size_str(c->bytes_freed, fr), lat,
			     books);
}

int ut_umm_print_clients(const struct ut_umm_client *c, size_t n)
{
	static const char *const cols[] = {
		"PID", "NAME", "PRIO", "READY", "QLEN", "QUEUED", "EVENTS",
		"DROPS", "ACKS", "FREED", "ACK-AVG", "BOOKS",
	};
	static const unsigned char prio[] = {
		9, 8, 3, 4, 1, 2, 5, 2, 4, 6, 3, 1,
	};
	struct libscols_table *tb = ut_table_new(cols, 12, 0x7f5);
	size_t i;
	int ret = 0;

	if (!tb)
		return -ENOMEM;
	for (i = 0; i < n && !ret; i++)
		ret = client_row(tb, &c[i]);
	return print_or_free(tb, ret, "clients", prio);
}

/*
 * A cgroup without a limit has no share and no room to show: "none" and
 * "-". USED% is what is not left as room: under a parent's limit, siblings'
 * usage counts too, as it does for the level.
 */
static int cgroup_row(struct libscols_table *tb, const struct ut_umm_cgroup *c)
{
	char used[CELL], cl[CELL], eta[CELL], ev[CELL];
	char u[UT_SIZE_STR], l[UT_SIZE_STR], r[UT_SIZE_STR];
	bool limited = c->limit != UT_UMM_NO_LIMIT;

	if (limited)
		pct_str(c->limit - (c->room < c->limit ? c->room : c->limit),
			c->limit, used);
	else
		snprintf(used, CELL, "-");
	u64_str(c->clients, cl);
	eta_str(c->eta_ms, eta);
	u64_str(c->events, ev);
	return ut_table_rowf(tb, 9, c->path, ut_size_str(c->usage, u),
			     limited ? ut_size_str(c->limit, l) : "none", used,
			     c->room != UT_UMM_NO_LIMIT ?
			     ut_size_str(c->room, r) : "-",
			     c->level, cl, eta, ev);
}

int ut_umm_print_cgroups(const struct ut_umm_cgroup *c, size_t n)
{
	static const char *const cols[] = {
		"PATH", "USAGE", "LIMIT", "USED%", "ROOM", "LEVEL", "CLIENTS",
		"ETA", "EVENTS",
	};
	static const unsigned char prio[] = { 9, 7, 6, 5, 8, 8, 2, 6, 3 };
	struct libscols_table *tb = ut_table_new(cols, 9, 0x1de);
	size_t i;
	int ret = 0;

	if (!tb)
		return -ENOMEM;
	for (i = 0; i < n && !ret; i++)
		ret = cgroup_row(tb, &c[i]);
	return print_or_free(tb, ret, "cgroups", prio);
}
