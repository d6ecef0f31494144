/* SPDX-License-Identifier: MIT */
/*
 * cgroup_scene.c - the memory-cgroup scene's common run (cgroup_scene.h).
 *
 * Three processes: this one (in the root cgroup, protected from the OOM
 * killer) samples the cgroup's memory.current and memory.events; the
 * trainer and the filler run in the cgroup. The filler is protected too
 * (oom_score_adj -1000), so that what the limit's OOM killer takes, if
 * anything, is the trainer. The sampler also watches the trainer's step
 * count (shared memory): a trainer that makes no step for 2 s gets its
 * threads' names, states and kernel stacks printed while it still lives,
 * since an OOM kill leaves nothing to look at (a CI run's trainer made
 * no step in 4.3 s and was killed in a pool growth at the limit); it is
 * printed when the trainer was killed or made no step.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup_scene.h"
#include "e2e.h"
#include "internal.h"
#include "pressure_internal.h"
#include "spill.h"

#define CG	"/sys/fs/cgroup"
#define STEP	(4 * MiB)
#define CG_LOW_BP	UMM_SYSFS "/cgroup/low_bp"

enum { MSG_READY = 1, MSG_DONE = 2 };

struct msg {
	int kind;
	int error;
	struct cg_result r;
};

static void send_msg(int fd, const struct msg *m)
{
	if (write(fd, m, sizeof(*m)) != (ssize_t)sizeof(*m))
		_exit(3);
}

/* cgroup2 mounted, the memory controller on for the root's children. */
static int cg_ready(void)
{
	int ret = 0;

	if (access(CG "/cgroup.controllers", F_OK) &&
	    mount("none", CG, "cgroup2", 0, NULL))
		return -errno;
	for (int i = 0; i < 100; i++) {
		ret = e2e_write_str(CG "/cgroup.subtree_control", "+memory");
		if (!ret)
			break;
		e2e_sleep_ms(20);
	}
	return ret;
}

static int cg_file(const char *cg, const char *file, char *p, size_t len)
{
	return snprintf(p, len, CG "/%s/%s", cg, file) < (int)len ? 0 :
								     -E2BIG;
}

static uint64_t cg_key(const char *cg, const char *file, const char *key)
{
	char p[256], k[64];
	unsigned long long v;
	uint64_t ret = 0;
	FILE *f;

	if (cg_file(cg, file, p, sizeof(p)))
		return 0;
	f = fopen(p, "r");
	if (!f)
		return 0;
	while (fscanf(f, "%63s %llu", k, &v) == 2)
		if (!strcmp(k, key))
			ret = v;
	fclose(f);
	return ret;
}

static int cg_enter(const char *cg)
{
	char p[256];

	if (cg_file(cg, "cgroup.procs", p, sizeof(p)))
		return -E2BIG;
	return e2e_write_str(p, "0");
}

/* ---- the trainer ----------------------------------------------------- */

/* A histogram bound for E2E-RESULT: -1 above the last finite one. */
static int ack_bound(uint32_t ms)
{
	return ms == ~0u ? -1 : (int)ms;
}

/*
 * The bucket bound under which a share @q of the @n ACKs in @le fell
 * (~0u: the open-ended last bucket).
 */
static uint32_t ack_quantile(const uint64_t *le, const uint32_t *bound,
			     int nb, uint64_t n, double q)
{
	uint64_t want = (uint64_t)((double)n * q + 0.999999), seen = 0;

	for (int i = 0; i < nb; i++) {
		seen += le[i];
		if (seen >= want)
			return bound[i];
	}
	return ~0u;
}

/*
 * Event-to-ACK p50/p99 of our client, from umm.ko's debugfs histogram
 * (its header names the bucket bounds, its row for our pid the counts):
 * measured by the module, ACK to event, not by libum.
 */
static void ack_percentiles(struct cg_result *r)
{
	char line[2048], *le, *save = NULL, *tok;
	uint32_t bound[32];
	uint64_t cnt[32], n = 0;
	int nb = 0, k = 0;
	FILE *f = fopen("/sys/kernel/debug/umm/clients", "r");

	if (!f)
		return;
	if (fgets(line, sizeof(line), f) && (le = strstr(line, "ack_ms_le(")))
		for (tok = strtok_r(le + 10, ",)\n", &save); tok && nb < 32;
		     tok = strtok_r(NULL, ",)\n", &save))
			bound[nb++] = strcmp(tok, "inf") ? (uint32_t)atoi(tok) :
							   ~0u;
	while (fgets(line, sizeof(line), f)) {
		char *sp = strrchr(line, ' ');

		if (atoi(line) != getpid() || !sp)
			continue;
		for (tok = strtok_r(sp + 1, ",\n", &save); tok && k < nb;
		     tok = strtok_r(NULL, ",\n", &save))
			n += cnt[k++] = strtoull(tok, NULL, 10);
	}
	fclose(f);
	if (!n || k != nb)
		return;
	r->ack_p50_ms = ack_quantile(cnt, bound, nb, n, 0.50);
	r->ack_p99_ms = ack_quantile(cnt, bound, nb, n, 0.99);
}

static void fill_result(struct trainer *t, struct cg_result *r)
{
	struct um_pressure_stats ps;
	struct um_spill_stats ss;
	uint64_t h[2] = { 0, 0 };

	trainer_where(t, h, 2, &r->spill_end, NULL);
	if (!um__pressure_stats(t->ctx, &ps)) {
		r->cgroup_events = ps.cgroup_events;
		r->cgroup_freed = ps.cgroup_freed;
		r->cgroup_room = ps.cgroup_room;
		r->cgroup_unmet = ps.cgroup_unmet;
		r->umm_events = ps.umm_events;
		r->acks = ps.acks;
		r->acked_bytes = ps.acked_bytes;
		r->sum_ack_ns = ps.sum_ack_ns;
		r->max_ack_ns = ps.max_ack_ns;
		r->first_event_ns = ps.first_event_ns;
		r->first_eta_ms = ps.first_eta_ms;
		r->max_level = ps.max_level;
		r->own_watch = ps.sources & UM_PSRC_CGROUP;
		r->own_events = ps.cgroup_own_events;
	}
	if (t->ctx->pressure)
		r->cgroup_feature = t->ctx->pressure->umm_cgroup;
	if (t->ctx->spill) {
		um__spill_stats(t->ctx->spill, &ss);
		r->spill_writes = ss.writes;
		r->spill_write_bytes = ss.write_bytes;
		r->spill_reads = ss.reads;
	}
}

/* One trainer: its cgroup, its size, its spill directory, its pipes. */
struct job {
	const char *cg;			/* under CG */
	int nregions;
	const char *spill_dir;
	int nice;
	pid_t pid;
	uint64_t *live_steps;		/* shared: the trainer's steps so far */
	int from_child, to_child;	/* our ends */
};

static void trainer_child(const struct cg_scene *sc, const struct job *j,
			  int wfd, int rfd)
{
	struct trainer_cfg cfg = {
		.nregions = j->nregions,
		.region_bytes = sc->region_bytes,
		.sim_capacity = sc->region_bytes,
		.spill_dir = j->spill_dir,
	};
	struct msg m = { .kind = MSG_READY };
	uint64_t h[2] = { 0, 0 }, spilled = 0;
	struct trainer t;
	char c;

	e2e_oom_adj(0);
	e2e_no_mlock();
	/* as the node scenes' trainer: its home node is node 0 */
	e2e_bind_node(0);
	if (j->nice)
		setpriority(PRIO_PROCESS, 0, j->nice);
	if (cg_enter(j->cg))
		_exit(20);
	setenv("LIBUM_PRESSURE", sc->reaction ? "1" : "0", 1);
	/*
	 * A trainer killed in an earlier scene (the control's, or a failed
	 * one) leaves its spill files: up to 112 MiB each on a 512 MiB disk,
	 * and the next scenes failed with ENOSPC after one such kill.
	 */
	setenv("LIBUM_SPILL_REMOVE_STALE", "1", 1);
	if (sc->own_watch)	/* as where umm.ko is not loaded */
		setenv("LIBUM_UMM_DEV", "/nonexistent/umm", 1);
	m.error = trainer_init(&t, &cfg);
	/*
	 * The trainer alone may come within a level of the limit (130-150
	 * MiB of 224 with the pool's chunks), so an event can spill copies
	 * before the fill: counted, they are what the trainer had to give.
	 */
	trainer_where(&t, h, 2, &spilled, NULL);
	m.r.host_start = h[0] + h[1] + spilled;
	send_msg(wfd, &m);
	if (m.error) {
		trainer_dump_log(&t);
		_exit(1);
	}
	fcntl(rfd, F_SETFL, O_NONBLOCK);
	while (read(rfd, &c, 1) < 0) {
		m.error = trainer_step(&t);
		if (m.error)
			break;
		__atomic_store_n(j->live_steps, t.steps, __ATOMIC_RELAXED);
	}
	m.kind = MSG_DONE;
	m.r.steps = t.steps;
	m.r.trainer_error = m.error;
	fill_result(&t, &m.r);
	ack_percentiles(&m.r);
	m.r.bad_regions = trainer_verify(&t);
	trainer_dump_log(&t);
	fflush(stdout);
	send_msg(wfd, &m);
	trainer_fini(&t);
	_exit(0);
}

/*
 * The trainer's shared step count: after job_stop, once the sampler no
 * longer reads it, or when the trainer did not start.
 */
static void job_unmap(struct job *j)
{
	if (j->live_steps)
		munmap(j->live_steps, sizeof(*j->live_steps));
	j->live_steps = NULL;
}

/* Fork the trainer of @j and wait until it holds its regions. */
static int job_start(const struct cg_scene *sc, struct job *j,
		     struct cg_result *res)
{
	int to_parent[2], to_child[2], ret;
	struct msg m;

	j->live_steps = mmap(NULL, sizeof(*j->live_steps),
			     PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (j->live_steps == MAP_FAILED) {
		j->live_steps = NULL;
		return -errno;
	}
	if (pipe(to_parent)) {
		ret = -errno;
		goto unmap;
	}
	if (pipe(to_child)) {
		ret = -errno;
		goto close_parent;
	}
	fflush(stdout);
	j->pid = fork();
	if (j->pid < 0) {
		ret = -errno;
		goto close_child;
	}
	if (j->pid == 0) {
		close(to_parent[0]);
		close(to_child[1]);
		trainer_child(sc, j, to_parent[1], to_child[0]);
	}
	close(to_parent[1]);
	close(to_child[0]);
	j->from_child = to_parent[0];
	j->to_child = to_child[1];
	ret = e2e_full_read(j->from_child, &m, sizeof(m));
	if (ret || m.kind != MSG_READY || m.error) {
		printf("# %s: trainer did not start (%d)\n", j->cg,
		       ret ? ret : m.error);
		kill(j->pid, SIGKILL);
		e2e_wait(j->pid);
		close(j->from_child);
		close(j->to_child);
		job_unmap(j);
		return ret ? ret : m.error;
	}
	res->host_start = m.r.host_start;
	return 0;

close_child:
	close(to_child[0]);
	close(to_child[1]);
close_parent:
	close(to_parent[0]);
	close(to_parent[1]);
unmap:
	job_unmap(j);
	return ret;
}

/* Stop the trainer of @j; its figures into @res, the parent's kept. */
static void job_stop(struct job *j, struct cg_result *res)
{
	struct cg_result keep = *res;
	struct msg m;
	int ret, st;

	if (write(j->to_child, "s", 1) != 1)
		printf("# %s: cannot signal the trainer\n", j->cg);
	ret = e2e_full_read(j->from_child, &m, sizeof(m));
	st = e2e_wait(j->pid);
	if (!ret && m.kind == MSG_DONE) {
		*res = m.r;
		res->host_start = keep.host_start;
		res->filler_status = keep.filler_status;
		res->fill_start_ns = keep.fill_start_ns;
		res->fill_end_ns = keep.fill_end_ns;
		res->id = keep.id;
	}
	res->trainer_killed = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
	close(j->from_child);
	close(j->to_child);
}

/* ---- the filler ------------------------------------------------------ */

/* fill bytes of anonymous memory at rate MiB/s, hold them 2 s, exit. */
static void filler_child(const struct cg_scene *sc, const char *cg)
{
	uint64_t t0, done = 0;

	e2e_oom_adj(-1000);
	if (cg_enter(cg))
		_exit(20);
	t0 = e2e_now_ns();
	while (done < sc->fill) {
		uint64_t due = t0 + done * 1000000000ull /
				       ((uint64_t)sc->rate_mib * MiB);
		char *p;

		while (e2e_now_ns() < due)
			e2e_sleep_ms(1);
		p = mmap(NULL, STEP, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			_exit(21);
		madvise(p, STEP, MADV_NOHUGEPAGE);
		for (uint64_t off = 0; off < STEP; off += 4096)
			p[off] = 1;
		done += STEP;
	}
	e2e_sleep_ms(2000);
	_exit(0);
}

/* ---- the cgroups ----------------------------------------------------- */

/* Where the scene's cgroups are, relative to CG. */
struct cg_paths {
	char job[96];		/* the trainer's (and the filler's) */
	char limit[96];		/* where memory.max and memory.high are */
	char sibling[96];	/* the second trainer's; "" none */
	char filled[96];	/* where the filler runs */
};

static int cg_paths(const struct cg_scene *sc, struct cg_paths *p)
{
	int n;

	memset(p, 0, sizeof(*p));
	if ((sc->limit_on_parent || sc->sibling) && !sc->parent)
		return -EINVAL;
	n = sc->parent ? snprintf(p->job, sizeof(p->job), "%s/%s",
				  sc->parent, sc->name) :
			 snprintf(p->job, sizeof(p->job), "%s", sc->name);
	if (n >= (int)sizeof(p->job))
		return -E2BIG;
	strcpy(p->limit, sc->limit_on_parent ? sc->parent : p->job);
	if (sc->sibling &&
	    snprintf(p->sibling, sizeof(p->sibling), "%s/%s", sc->parent,
		     sc->sibling) >= (int)sizeof(p->sibling))
		return -E2BIG;
	strcpy(p->filled, sc->fill_sibling ? p->sibling : p->job);
	return 0;
}

static int cg_set(const char *cg, const char *file, uint64_t v)
{
	char p[256], val[32];

	if (cg_file(cg, file, p, sizeof(p)))
		return -E2BIG;
	snprintf(val, sizeof(val), "%llu", (unsigned long long)v);
	return e2e_write_str(p, val);
}

static int cg_make(const char *cg, uint64_t *id)
{
	char dir[256];
	struct stat sb;

	snprintf(dir, sizeof(dir), CG "/%s", cg);
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	if (id && !stat(dir, &sb))
		*id = sb.st_ino;
	return 0;
}

static void cg_remove(const char *cg)
{
	char dir[256];

	snprintf(dir, sizeof(dir), CG "/%s", cg);
	for (int i = 0; i < 100 && rmdir(dir) && errno == EBUSY; i++)
		e2e_sleep_ms(20);
}

static void cg_remove_all(const struct cg_scene *sc, const struct cg_paths *p)
{
	cg_remove(p->job);
	if (p->sibling[0])
		cg_remove(p->sibling);
	if (sc->parent)
		cg_remove(sc->parent);
}

/*
 * The parent (its children get the memory controller), the job's cgroup,
 * the sibling's; the limits. No swap in the VM; elsewhere none either.
 */
static int cg_setup(const struct cg_scene *sc, const struct cg_paths *p,
		    uint64_t *id)
{
	char ctl[256];
	int ret;

	if (sc->parent) {
		ret = cg_make(sc->parent, NULL);
		if (ret)
			return ret;
		cg_file(sc->parent, "cgroup.subtree_control", ctl, sizeof(ctl));
		ret = e2e_write_str(ctl, "+memory");
		if (ret)
			return ret;
	}
	ret = cg_make(p->job, id);
	if (ret)
		return ret;
	ret = cg_set(p->limit, "memory.max", sc->limit);
	if (!ret && sc->high)
		ret = cg_set(p->limit, "memory.high", sc->high);
	if (ret)
		return ret;
	cg_set(p->limit, "memory.swap.max", 0);
	if (!p->sibling[0])
		return 0;
	ret = cg_make(p->sibling, NULL);
	if (!ret)
		ret = cg_set(p->sibling, "memory.max", sc->sibling_limit);
	cg_set(p->sibling, "memory.swap.max", 0);
	return ret;
}

/* ---- the run --------------------------------------------------------- */

struct sampler {
	pthread_t thread;
	const char *cg;
	volatile bool stop;
	uint64_t limit_ns, oom_ns, high_ns, peak;
	const struct job *job;		/* the filled job's trainer */
	uint64_t steps, steps_ns;	/* its steps when they last moved */
	char *dump;			/* what watch_stall saw, or NULL */
	size_t dump_len;
};

/*
 * No step for this long: worth a look. A step of the 7 regions takes 0.2-1
 * s in the rig and over 2 s on a loaded machine, so the dump is kept and
 * printed only when the trainer was killed or never stepped.
 */
#define STALL_NS	(2000 * 1000000ull)

/*
 * The trainer made no step for STALL_NS: where each of its threads waits,
 * once a scene, while it still lives (an OOM kill leaves nothing to see);
 * printed by print_stall if the trainer did not survive or never stepped.
 */
static void watch_stall(struct sampler *s)
{
	uint64_t now = e2e_now_ns();
	uint64_t steps = __atomic_load_n(s->job->live_steps, __ATOMIC_RELAXED);
	FILE *out;

	if (steps != s->steps || !s->steps_ns) {
		s->steps = steps;
		s->steps_ns = now;
		return;
	}
	if (s->dump || now - s->steps_ns < STALL_NS)
		return;
	out = open_memstream(&s->dump, &s->dump_len);
	if (!out)
		return;
	fprintf(out, "# %s: the trainer made no step in %.0f ms (%llu so far); its threads:\n",
		s->job->cg, e2e_ms(now - s->steps_ns),
		(unsigned long long)steps);
	e2e_dump_threads(out, s->job->pid, "  ");
	fclose(out);
}

static void print_stall(struct sampler *s, const struct cg_scene *sc,
			const struct cg_result *res)
{
	if (s->dump && sc->reaction && (res->trainer_killed || !res->steps))
		fputs(s->dump, stdout);
	free(s->dump);
	s->dump = NULL;
}

static void *sample(void *arg)
{
	struct sampler *s = arg;
	char p[256];

	while (!s->stop) {
		uint64_t cur = 0;

		if (!cg_file(s->cg, "memory.current", p, sizeof(p)) &&
		    !e2e_read_u64(p, &cur) && cur > s->peak)
			s->peak = cur;
		if (!s->limit_ns && cg_key(s->cg, "memory.events", "max"))
			s->limit_ns = e2e_now_ns();
		if (!s->oom_ns && cg_key(s->cg, "memory.events", "oom"))
			s->oom_ns = e2e_now_ns();
		if (!s->high_ns && cg_key(s->cg, "memory.events", "high"))
			s->high_ns = e2e_now_ns();
		watch_stall(s);
		e2e_sleep_ms(2);
	}
	return NULL;
}

/* The cgroup's counts at the end (memory.events is hierarchical). */
static void cg_final(const char *cg, struct cg_result *res)
{
	res->max_events = cg_key(cg, "memory.events", "max");
	res->high_events = cg_key(cg, "memory.events", "high");
	res->oom = cg_key(cg, "memory.events", "oom");
	res->oom_kill = cg_key(cg, "memory.events", "oom_kill");
}

/* ms from the fill's start to @ns; -1 for never */
static double since_fill(const struct cg_result *res, uint64_t ns)
{
	return ns ? (double)((int64_t)ns - (int64_t)res->fill_start_ns) / 1e6 :
		    -1;
}

static double lead_ms(uint64_t first_event_ns, uint64_t hit_ns)
{
	return (double)((int64_t)hit_ns - (int64_t)first_event_ns) / 1e6;
}

static void report(const char *name, const struct cg_scene *sc,
		   const struct cg_result *res)
{
	printf("# %s: trainer %s after %llu steps, %d region(s) differ, filler exit %d\n",
	       name, res->trainer_killed ? "KILLED" : "finished",
	       (unsigned long long)res->steps, res->bad_regions,
	       res->filler_status);
	printf("# %s: fill %.1f MiB/s; cgroup peak %llu MiB; memory.events max %llu high %llu oom %llu oom_kill %llu; limit first hit %.0f ms, high %.0f ms, oom %.0f ms after the fill began (-1 never)\n",
	       name,
	       (double)sc->fill / MiB /
		       ((double)(res->fill_end_ns - res->fill_start_ns) / 1e9),
	       (unsigned long long)(res->peak / MiB),
	       (unsigned long long)res->max_events,
	       (unsigned long long)res->high_events,
	       (unsigned long long)res->oom,
	       (unsigned long long)res->oom_kill,
	       since_fill(res, res->limit_ns), since_fill(res, res->high_ns),
	       since_fill(res, res->oom_ns));
	printf("# %s: cgroup events granted %d; %llu cgroup events (first %.0f ms after the fill began, eta %u ms, worst level %u), room at the last %llu MiB; %llu ACKs, %llu MiB freed, event-to-ACK avg %.1f ms max %.1f ms; asks not met %llu\n",
	       name, res->cgroup_feature,
	       (unsigned long long)res->cgroup_events,
	       since_fill(res, res->first_event_ns),
	       res->first_eta_ms, res->max_level,
	       (unsigned long long)(res->cgroup_room / MiB),
	       (unsigned long long)res->acks,
	       (unsigned long long)(res->acked_bytes / MiB),
	       res->acks ? e2e_ms(res->sum_ack_ns / res->acks) : 0,
	       e2e_ms(res->max_ack_ns),
	       (unsigned long long)res->cgroup_unmet);
	if (res->ack_p50_ms)
		printf("# %s: event-to-ACK by umm.ko's histogram: p50 <= %d ms, p99 <= %d ms (-1: over the last bound)\n",
		       name, ack_bound(res->ack_p50_ms),
		       ack_bound(res->ack_p99_ms));
	printf("# %s: spill %llu writes (%llu MiB), %llu reads; %llu MiB in the spill at the end\n",
	       name, (unsigned long long)res->spill_writes,
	       (unsigned long long)(res->spill_write_bytes / MiB),
	       (unsigned long long)res->spill_reads,
	       (unsigned long long)(res->spill_end / MiB));
	if (res->first_event_ns && res->limit_ns)
		printf("# %s: lead time first event -> limit hit: %.0f ms\n",
		       name, lead_ms(res->first_event_ns, res->limit_ns));
	if (res->first_event_ns && res->high_ns)
		printf("# %s: lead time first event -> memory.high first crossed: %.0f ms\n",
		       name, lead_ms(res->first_event_ns, res->high_ns));
	printf("# E2E-RESULT scenario=%s killed=%d oom_kill=%llu events=%llu acks=%llu freed_mib=%llu spilled_mib=%llu ack_avg_ms=%.1f ack_max_ms=%.1f first_event_ms=%.0f limit_ms=%.0f peak_mib=%llu module_ack_p50_ms=%d module_ack_p99_ms=%d high=%llu high_ms=%.0f\n",
	       name, res->trainer_killed,
	       (unsigned long long)res->oom_kill,
	       (unsigned long long)res->cgroup_events,
	       (unsigned long long)res->acks,
	       (unsigned long long)(res->acked_bytes / MiB),
	       (unsigned long long)(res->spill_write_bytes / MiB),
	       res->acks ? e2e_ms(res->sum_ack_ns / res->acks) : 0,
	       e2e_ms(res->max_ack_ns),
	       since_fill(res, res->first_event_ns),
	       since_fill(res, res->limit_ns),
	       (unsigned long long)(res->peak / MiB),
	       ack_bound(res->ack_p50_ms), ack_bound(res->ack_p99_ms),
	       (unsigned long long)res->high_events,
	       since_fill(res, res->high_ns));
}

static void print_start(const char *name, const struct cg_scene *sc,
			const struct cg_paths *p, const struct cg_result *res,
			const struct cg_result *sib)
{
	char f[256];
	uint64_t cur = 0;

	cg_file(p->limit, "memory.current", f, sizeof(f));
	e2e_read_u64(f, &cur);
	printf("# %s: cgroup %s (%llu): memory.max %llu MiB, memory.high %llu MiB (0 none) on %s; the trainer holds %llu MiB of host copies (spilled ones counted), %s %llu MiB; the filler takes %llu MiB at %u MiB/s in %s\n",
	       name, p->job, (unsigned long long)res->id,
	       (unsigned long long)(sc->limit / MiB),
	       (unsigned long long)(sc->high / MiB), p->limit,
	       (unsigned long long)(res->host_start / MiB), p->limit,
	       (unsigned long long)(cur / MiB),
	       (unsigned long long)(sc->fill / MiB), sc->rate_mib, p->filled);
	if (sib)
		printf("# %s: sibling %s: memory.max %llu MiB; its trainer holds %llu MiB of host copies\n",
		       name, p->sibling,
		       (unsigned long long)(sc->sibling_limit / MiB),
		       (unsigned long long)(sib->host_start / MiB));
}

/* A job's name in the report: "<parent>-<cgroup>" under a parent. */
static const char *report_name(const struct cg_scene *sc, const char *cg,
			       char *buf, size_t len)
{
	if (!sc->parent)
		return cg;
	snprintf(buf, len, "%s-%s", sc->parent, cg);
	return buf;
}

/* Fill at the scene's rate in @cg; the trainers run all along. */
static void fill(const struct cg_scene *sc, const char *cg,
		 struct cg_result *res)
{
	pid_t filler;

	fflush(stdout);
	res->fill_start_ns = e2e_now_ns();
	filler = fork();
	if (filler == 0)
		filler_child(sc, cg);
	res->filler_status = filler < 0 ? -1 :
				e2e_status_code(e2e_wait(filler));
	res->fill_end_ns = e2e_now_ns() - 2000000000ull;	/* its hold */
}

int cg_scene_run_pair(const struct cg_scene *sc, struct cg_result *res,
		      struct cg_result *sib)
{
	struct job a = { .nregions = sc->nregions, .spill_dir = sc->spill_dir };
	/*
	 * The sibling at nice 10: its steps go on all through the fill, but
	 * yield the VM's two emulated CPUs to the filled job's spill; the
	 * scene is about who is asked, not about sharing CPUs.
	 */
	struct job b = { .nregions = sc->sibling_nregions, .nice = 10 };
	struct sampler smp = { 0 };
	char low_bp[32], b_spill[128], name[128];
	struct cg_paths p;
	int ret;

	memset(res, 0, sizeof(*res));
	if (sib)
		memset(sib, 0, sizeof(*sib));
	ret = cg_paths(sc, &p);
	if (ret)
		return ret;
	if (!sib != !sc->sibling)
		return -EINVAL;
	a.cg = p.job;
	b.cg = p.sibling;
	snprintf(b_spill, sizeof(b_spill), "%s-%s", sc->spill_dir,
		 sc->sibling ? sc->sibling : "");
	b.spill_dir = b_spill;
	smp.cg = p.limit;
	smp.job = sc->fill_sibling ? &b : &a;
	signal(SIGPIPE, SIG_IGN);
	e2e_oom_adj(-1000);
	/*
	 * LOW at 40 % of the limit rather than 20 %: the spill's writes in
	 * the emulated VM go at about the filler's rate, and the trainer's
	 * host copies must be out before the filler's bytes come in.
	 */
	if (e2e_read_str(CG_LOW_BP, low_bp, sizeof(low_bp)))
		low_bp[0] = '\0';
	else
		e2e_write_str(CG_LOW_BP, "4000");
	ret = cg_ready();
	if (!ret)
		ret = cg_setup(sc, &p, &res->id);
	if (!ret)
		ret = job_start(sc, &a, res);
	if (ret)
		goto out;
	if (sib) {
		ret = job_start(sc, &b, sib);
		if (ret) {
			job_stop(&a, res);
			goto out;
		}
	}
	print_start(report_name(sc, sc->name, name, sizeof(name)), sc, &p, res,
		    sib);
	pthread_create(&smp.thread, NULL, sample, &smp);
	fill(sc, p.filled, res);
	e2e_sleep_ms(500);
	job_stop(&a, res);
	if (sib) {
		sib->fill_start_ns = res->fill_start_ns;
		sib->fill_end_ns = res->fill_end_ns;
		sib->filler_status = res->filler_status;
		job_stop(&b, sib);
	}
	smp.stop = true;
	pthread_join(smp.thread, NULL);
	res->limit_ns = smp.limit_ns;
	res->oom_ns = smp.oom_ns;
	res->high_ns = smp.high_ns;
	res->peak = smp.peak;
	print_stall(&smp, sc, smp.job == &a ? res : sib);
	cg_final(p.limit, res);
	report(report_name(sc, sc->name, name, sizeof(name)), sc, res);
	if (sib) {
		char f[256];

		cg_final(p.sibling, sib);
		cg_file(p.sibling, "memory.peak", f, sizeof(f));
		e2e_read_u64(f, &sib->peak);
		report(report_name(sc, sc->sibling, name, sizeof(name)), sc,
		       sib);
	}
out:
	job_unmap(&a);
	job_unmap(&b);
	cg_remove_all(sc, &p);
	if (low_bp[0])
		e2e_write_str(CG_LOW_BP, low_bp);
	return ret;
}

int cg_scene_run(const struct cg_scene *sc, struct cg_result *res)
{
	return cg_scene_run_pair(sc, res, NULL);
}

struct cg_scene cg_scene_224(const char *name, const char *spill_dir)
{
	return (struct cg_scene){
		.name = name,
		.reaction = true,
		.spill_dir = spill_dir,
		.limit = 224 * MiB,
		.fill = 140 * MiB,
		.rate_mib = 32,
		.nregions = 7,
		.region_bytes = 16 * MiB,
	};
}
