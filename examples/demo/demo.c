/* SPDX-License-Identifier: MIT */
/*
 * demo.c - the kernel-assisted scene that `make demo` shows (scripts/demo.sh
 * drives it, on the host when /dev/umm works there, in the VM rig otherwise).
 *
 * A trainer (the e2e one: optimizer-state regions on the sim backend, a
 * deterministic update per step) runs bound to node 0 while umpressure fills
 * node 0 with real memory. umm.ko sees the node coming down, sends PRESSURE
 * events naming a node with room; libum sheds its host copies there and ACKs.
 * The trainer always does exactly --steps steps, so the XXH3 checksum of its
 * final state can be compared with an unconstrained run (--reference: the
 * same steps, no pressure, no module), computed by the same function.
 *
 * --cgroup is the container scene: the trainer runs in a cgroup v2 whose
 * memory.max is below what it and the filler (umpressure --cgroup, in the
 * same cgroup) would take together; umm.ko warns the trainer before the
 * limit, libum writes its released host copies to its spill directory
 * (LIBUM_SPILL_DIR, on disk) and ACKs, and the cgroup's OOM killer has
 * nothing to do (memory.events oom_kill stays 0).
 *
 * Output: readable "demo:" lines as things happen (levels, events, moves,
 * ACKs; libum's own lines come as "# libum[pid] ..." and scripts/demo.sh
 * reformats them), then "DEMO-RESULT key=value" lines for the summary.
 * Exit: 0 when the scene ran, 1 on a failure to run it, 2 on bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "e2e.h"
#include "pressure.h"

struct opts {
	unsigned int steps;
	int nregions;
	uint64_t region_bytes;
	double rate_mib;
	uint64_t margin;
	bool reference;
	bool no_reaction;		/* LIBUM_PRESSURE=0: the control run */
	bool cgroup;			/* the container scene */
	uint64_t cg_limit;		/* its memory.max */
};

#define CG_ROOT		"/sys/fs/cgroup"
#define CG_NAME		"/um-demo"	/* as umm.ko's debugfs shows it */
#define CG_DIR		CG_ROOT CG_NAME
#define CG_LOW_BP	UMM_SYSFS "/cgroup/low_bp"
#define CG_DEBUGFS	"/sys/kernel/debug/umm/cgroups"
/*
 * What the trainer needs beyond what stays after its host copies went to
 * the spill: a region on its way back from the spill and one on its way
 * out, and the pool's chunks around them. The filler leaves that much.
 */
#define CG_SLACK	(64 * MiB)

/* What the trainer child sends back at the end. */
struct result {
	int error;
	int bad_regions;
	uint64_t steps;
	uint64_t checksum;
	uint64_t host_start[2], host_end[2], host_peak[2];
	uint64_t to_node[2];		/* bytes that arrived on a node */
	uint64_t evict_bytes, restore_bytes;
	uint64_t moves_paged, moves_copied;	/* host copies between nodes */
	uint64_t spill_bytes, spill_end;	/* written; left at the end */
	struct um_pressure_stats ps;
};

static uint64_t t_zero;

static double now_s(void)
{
	return (double)(e2e_now_ns() - t_zero) / 1e9;
}

/* The same function for the reference and the scene: region by region. */
static int state_checksum(struct trainer *t, uint64_t *sum)
{
	XXH3_state_t *h = XXH3_createState();
	int ret = 0;

	if (!h)
		return -ENOMEM;
	XXH3_64bits_reset(h);
	for (int i = 0; i < t->cfg.nregions && !ret; i++) {
		void *p;

		ret = um_acquire(t->ctx, t->r[i], UM_TIER_GPU(0), NULL);
		if (!ret)
			ret = um_wait(t->ctx, t->r[i]);
		if (!ret)
			ret = um_ptr(t->ctx, t->r[i], &p);
		if (!ret)
			XXH3_64bits_update(h, p, t->cfg.region_bytes);
		um_release(t->ctx, t->r[i]);
	}
	*sum = XXH3_64bits_digest(h);
	XXH3_freeState(h);
	return ret;
}

static struct trainer_cfg trainer_cfg_of(const struct opts *o)
{
	struct trainer_cfg c = {
		.nregions = o->nregions,
		.region_bytes = o->region_bytes,
		.sim_capacity = o->region_bytes,
	};

	return c;
}

static int run_reference(const struct opts *o)
{
	struct trainer_cfg cfg = trainer_cfg_of(o);
	struct trainer t;
	uint64_t sum = 0;
	int ret, bad;

	setenv("LIBUM_PRESSURE", "0", 1);
	ret = trainer_init(&t, &cfg);
	for (unsigned int s = 0; !ret && s < o->steps; s++)
		ret = trainer_step(&t);
	if (!ret)
		ret = state_checksum(&t, &sum);
	bad = ret ? -1 : trainer_verify(&t);
	trainer_fini(&t);
	if (ret) {
		fprintf(stderr, "demo: reference run failed: %s\n",
			strerror(-ret));
		return 1;
	}
	printf("DEMO-REF checksum=%016llx steps=%u regions=%d region_mib=%llu bad=%d\n",
	       (unsigned long long)sum, o->steps, o->nregions,
	       (unsigned long long)(o->region_bytes / MiB), bad);
	return bad ? 1 : 0;
}

/* ---- the trainer child ----------------------------------------------- */

static void where(struct trainer *t, uint64_t h[2], uint64_t *sp)
{
	h[0] = h[1] = 0;
	*sp = 0;
	trainer_where(t, h, 2, sp, NULL);
}

/* A line when host copies changed node (or went to the spill). */
static void track_moves(struct trainer *t, uint64_t prev[3], struct result *r,
			const char *when)
{
	uint64_t h[2], sp;

	where(t, h, &sp);
	if (h[0] == prev[0] && h[1] == prev[1] && sp == prev[2])
		return;
	for (int n = 0; n < 2; n++) {
		if (h[n] > prev[n])
			r->to_node[n] += h[n] - prev[n];
		if (h[n] > r->host_peak[n])
			r->host_peak[n] = h[n];
	}
	if (sp || prev[2])
		printf("demo: %6.1f s  trainer's host copies now (%s): node 0 %llu MiB, node 1 %llu MiB; in the spill %llu MiB\n",
		       now_s(), when, (unsigned long long)(h[0] / MiB),
		       (unsigned long long)(h[1] / MiB),
		       (unsigned long long)(sp / MiB));
	else
		printf("demo: %6.1f s  trainer's host copies now (%s): node 0 %llu MiB, node 1 %llu MiB\n",
		       now_s(), when, (unsigned long long)(h[0] / MiB),
		       (unsigned long long)(h[1] / MiB));
	fflush(stdout);
	prev[0] = h[0];
	prev[1] = h[1];
	prev[2] = sp;
}

static void trainer_child(const struct opts *o, int wfd, int rfd)
{
	struct trainer_cfg cfg = trainer_cfg_of(o);
	struct um_stats st = { .size = sizeof(st) };
	struct result r;
	struct trainer t;
	bool stop = false;
	uint64_t prev[3] = { 0 }, sp, go, span_ms = 0;
	char c;

	memset(&r, 0, sizeof(r));
	e2e_oom_adj(1000);	/* the OOM killer's first choice */
	e2e_no_mlock();
	e2e_bind_node(0);
	/* into the cgroup before libum takes memory: all of it is charged */
	if (o->cgroup)
		r.error = e2e_write_str(CG_DIR "/cgroup.procs", "0");
	setenv("LIBUM_PRESSURE", o->no_reaction ? "0" : "1", 1);
	setenv("E2E_DEBUG", "1", 1);	/* libum's lines, for the stream */
	if (!r.error)
		r.error = trainer_init(&t, &cfg);
	if (!r.error) {
		where(&t, r.host_start, &sp);
		memcpy(prev, r.host_start, sizeof(r.host_start));
		memcpy(r.host_peak, r.host_start, sizeof(r.host_start));
	}
	if (write(wfd, &r, sizeof(r)) != (ssize_t)sizeof(r) || r.error)
		_exit(1);
	/*
	 * Go: the parent sends how long the node will fill. The steps are
	 * spread over that time, so the trainer is at work while its copies
	 * move (a fast machine would finish them before the first event).
	 */
	if (e2e_full_read(rfd, &span_ms, sizeof(span_ms)))
		_exit(1);
	go = e2e_now_ns();
	fcntl(rfd, F_SETFL, O_NONBLOCK);
	/* exactly o->steps in all */
	while (!r.error && (!stop || t.steps < o->steps)) {
		uint64_t due = go + t.steps * span_ms * 1000000ull / o->steps;

		if (!stop && read(rfd, &c, 1) >= 0)
			stop = true;
		if (t.steps < o->steps && (stop || e2e_now_ns() >= due)) {
			r.error = trainer_step(&t);
			if (t.steps % 5 == 0 || t.steps == o->steps)
				printf("demo: %6.1f s  trainer: step %llu of %u\n",
				       now_s(), (unsigned long long)t.steps,
				       o->steps);
			track_moves(&t, prev, &r, "after a step");
		} else {
			e2e_sleep_ms(100);
			track_moves(&t, prev, &r, "while idle");
		}
	}
	r.steps = t.steps;
	where(&t, r.host_end, &sp);
	if (!um_stats_get(t.ctx, &st)) {
		r.evict_bytes = st.evict_bytes;
		r.restore_bytes = st.restore_bytes;
		r.moves_paged = st.node_moves_paged;
		r.moves_copied = st.node_moves_copied;
		r.spill_bytes = st.spill.total;
		r.spill_end = st.spill.current;
		for (int n = 0; n < 2; n++)
			if (st.host[n].peak > r.host_peak[n])
				r.host_peak[n] = st.host[n].peak;
	}
	um__pressure_stats(t.ctx, &r.ps);
	if (!r.error)
		r.error = state_checksum(&t, &r.checksum);
	r.bad_regions = trainer_verify(&t);
	fflush(stdout);
	if (write(wfd, &r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(3);
	trainer_fini(&t);
	_exit(0);
}

/* ---- the scene ------------------------------------------------------- */

static uint64_t vmstat_oom_kills(void)
{
	char line[128];
	uint64_t v = 0;
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "oom_kill %llu", (unsigned long long *)&v) == 1)
			break;
	fclose(f);
	return v;
}

struct watch {
	pthread_t thread;
	volatile bool stop;
	const char *key;		/* "node0" or "cgroup" */
	uint64_t critical_ns;
	uint64_t peak_ns;		/* node 0 (cgroup) first at its worst */
	int max_level[2];
	/* the container scene */
	uint64_t cg_limit, cg_peak;	/* memory.max, memory.current peak */
	uint64_t limit_ns;		/* memory.events max first rose */
	uint64_t ev0[3];		/* memory.events at the start */
};

static const char *level_name(int lv)
{
	static const char *const names[] = { "?", "normal", "low", "medium",
					     "critical" };

	return lv >= 0 && lv < 5 ? names[lv] : "?";
}

/* Node levels as umm.ko sees them: a line per change, free memory now and then. */
static void *watcher(void *arg)
{
	struct watch *w = arg;
	int last[2] = { -1, -1 };
	unsigned int tick = 0;

	while (!w->stop) {
		for (int n = 0; n < 2; n++) {
			int lv = e2e_node_level(n);
			uint64_t fr = 0, tot = 0;

			if (lv > w->max_level[n]) {
				w->max_level[n] = lv;
				if (n == 0)
					w->peak_ns = e2e_now_ns();
			}
			if (n == 0 && lv >= 4 && !w->critical_ns)
				w->critical_ns = e2e_now_ns();
			if (!lv || (lv == last[n] && (n || tick % 100)))
				continue;
			e2e_node_free(n, &fr, &tot);
			if (last[n] < 0)
				printf("demo: %6.1f s  node %d level %s (%llu of %llu MiB free)\n",
				       now_s(), n, level_name(lv),
				       (unsigned long long)(fr / MiB),
				       (unsigned long long)(tot / MiB));
			else if (lv != last[n])
				printf("demo: %6.1f s  node %d level %s -> %s (%llu MiB free)\n",
				       now_s(), n, level_name(last[n]),
				       level_name(lv), (unsigned long long)(fr / MiB));
			else
				printf("demo: %6.1f s  node 0 %s, %llu MiB free\n",
				       now_s(), level_name(lv),
				       (unsigned long long)(fr / MiB));
			fflush(stdout);
			last[n] = lv;
		}
		tick++;
		e2e_sleep_ms(20);
	}
	return NULL;
}

static void print_levels(const struct um_pressure_stats *ps,
			 const struct watch *w, int ump_st, uint64_t ooms)
{
	printf("DEMO-RESULT peak_s=%.2f\n",
	       w->peak_ns ? (double)(w->peak_ns - t_zero) / 1e9 : -1.0);
	printf("DEMO-RESULT first_event_s=%.2f critical_s=%.2f lead_ms=%.0f %s_max_level=%s umpressure_status=%d oom_kills=%llu\n",
	       ps->first_event_ns ? (double)(ps->first_event_ns - t_zero) / 1e9 : -1.0,
	       w->critical_ns ? (double)(w->critical_ns - t_zero) / 1e9 : -1.0,
	       ps->first_event_ns && w->critical_ns ?
		       (double)((int64_t)w->critical_ns - (int64_t)ps->first_event_ns) / 1e6 : -1.0,
	       w->key, level_name(w->max_level[0]), ump_st,
	       (unsigned long long)ooms);
}

static void print_result(const struct result *r, const struct watch *w,
			 int trainer_st, int ump_st, uint64_t ooms)
{
	const struct um_pressure_stats *ps = &r->ps;

	printf("DEMO-RESULT trainer_status=%d killed=%d error=%d\n",
	       e2e_status_code(trainer_st),
	       WIFSIGNALED(trainer_st) && WTERMSIG(trainer_st) == SIGKILL,
	       r->error);
	print_levels(ps, w, ump_st, ooms);
	if (r->error == -EPIPE)	/* the trainer never reported */
		return;
	printf("DEMO-RESULT steps=%llu bad=%d checksum=%016llx\n",
	       (unsigned long long)r->steps, r->bad_regions,
	       (unsigned long long)r->checksum);
	printf("DEMO-RESULT umm_events=%llu acks=%llu acked_mib=%llu shed_mib=%llu ack_avg_ms=%.1f ack_max_ms=%.1f max_event_level=%u\n",
	       (unsigned long long)ps->umm_events, (unsigned long long)ps->acks,
	       (unsigned long long)(ps->acked_bytes / MiB),
	       (unsigned long long)(ps->shed_bytes / MiB),
	       ps->acks ? e2e_ms(ps->sum_ack_ns / ps->acks) : 0.0,
	       e2e_ms(ps->max_ack_ns), ps->max_level);
	printf("DEMO-RESULT moves_paged=%llu moves_copied=%llu\n",
	       (unsigned long long)r->moves_paged,
	       (unsigned long long)r->moves_copied);
	printf("DEMO-RESULT node0_start_mib=%llu node0_end_mib=%llu node1_peak_mib=%llu node1_end_mib=%llu to_node1_mib=%llu to_node0_mib=%llu evict_mib=%llu restore_mib=%llu\n",
	       (unsigned long long)(r->host_start[0] / MiB),
	       (unsigned long long)(r->host_end[0] / MiB),
	       (unsigned long long)(r->host_peak[1] / MiB),
	       (unsigned long long)(r->host_end[1] / MiB),
	       (unsigned long long)(r->to_node[1] / MiB),
	       (unsigned long long)(r->to_node[0] / MiB),
	       (unsigned long long)(r->evict_bytes / MiB),
	       (unsigned long long)(r->restore_bytes / MiB));
	printf("DEMO-RESULT spill_mib=%llu spill_end_mib=%llu\n",
	       (unsigned long long)(r->spill_bytes / MiB),
	       (unsigned long long)(r->spill_end / MiB));
}

/* ---- the scenes ------------------------------------------------------ */

/*
 * The shell that runs us (the VM rig's /init, or scripts/demo.sh) carries
 * our output: the OOM killer must not pick it if the trainer is not enough
 * (the control run). Best effort: only root may lower a score.
 */
static void protect_parent(void)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", (int)getppid());
	if (!access(path, W_OK))
		e2e_write_str(path, "-1000");
}

/* The start both scenes share; the trainer's pid, -1 when it failed. */
static pid_t start_trainer(const struct opts *o, struct result *r,
			   int *rfd, int *wfd)
{
	int to_parent[2], to_child[2];
	pid_t trainer;

	signal(SIGPIPE, SIG_IGN);
	if (o->no_reaction) {
		/* for the rig's kernel-log judge: this OOM kill is the point */
		printf("# expect-dmesg: Out of memory|oom-kill|invoked oom-killer|Killed process\n");
		printf("demo: %6.1f s  control run: libum's reaction is OFF (LIBUM_PRESSURE=0)\n",
		       now_s());
	}
	e2e_oom_adj(-1000);
	protect_parent();
	if (pipe(to_parent) || pipe(to_child))
		return -1;
	fflush(stdout);
	trainer = fork();
	if (trainer < 0)
		return -1;
	if (trainer == 0) {
		close(to_parent[0]);
		close(to_child[1]);
		trainer_child(o, to_parent[1], to_child[0]);
	}
	close(to_parent[1]);
	close(to_child[0]);
	*rfd = to_parent[0];
	*wfd = to_child[1];
	if (e2e_full_read(*rfd, r, sizeof(*r)) || r->error) {
		fprintf(stderr, "demo: the trainer did not start (%d)\n", r->error);
		kill(trainer, SIGKILL);
		e2e_wait(trainer);
		return -1;
	}
	return trainer;
}

/* Go: the trainer's steps spread over the fill at that rate and the hold. */
static void start_steps(const struct opts *o, int wfd, uint64_t target)
{
	uint64_t span_ms = (uint64_t)((double)target / MiB / o->rate_mib *
				      1000) + 2000;

	if (write(wfd, &span_ms, sizeof(span_ms)) != (ssize_t)sizeof(span_ms))
		printf("demo: cannot start the trainer's steps\n");
}

/*
 * Wait for umpressure; a trainer that dies meanwhile ends it (nothing left
 * to show). Then the trainer's last steps and its result. Returns
 * umpressure's exit status.
 */
static int finish(pid_t *trainer, int *trainer_st, pid_t ump, int rfd,
		  int wfd, struct result *r, const char *given_back)
{
	int st, ump_st = -1;

	while (ump > 0) {
		if (*trainer > 0 &&
		    waitpid(*trainer, trainer_st, WNOHANG) == *trainer) {
			printf("demo: %6.1f s  trainer DIED (status %d%s)\n", now_s(),
			       e2e_status_code(*trainer_st),
			       WIFSIGNALED(*trainer_st) &&
			       WTERMSIG(*trainer_st) == SIGKILL ? ", SIGKILL: the OOM killer" : "");
			*trainer = -1;
			kill(ump, SIGTERM);
		}
		if (waitpid(ump, &st, WNOHANG) == ump) {
			ump_st = e2e_status_code(st);
			break;
		}
		e2e_sleep_ms(20);
	}
	printf("demo: %6.1f s  umpressure done (exit %d), %s\n", now_s(),
	       ump_st, given_back);
	fflush(stdout);
	e2e_sleep_ms(1000);
	if (*trainer > 0 && write(wfd, "s", 1) != 1)
		printf("demo: cannot signal the trainer\n");
	memset(r, 0, sizeof(*r));
	r->error = e2e_full_read(rfd, r, sizeof(*r)) ? -EPIPE : r->error;
	if (*trainer > 0)
		*trainer_st = e2e_wait(*trainer);
	return ump_st;
}

static int run_scene(const struct opts *o)
{
	int rfd, wfd, trainer_st = 0, ump_st;
	uint64_t free0 = 0, tot = 0, target, oom0;
	char tgt[32], rate[32];
	struct watch w = { .key = "node0" };
	struct result r;
	pid_t trainer, ump;

	if (!e2e_have_umm()) {
		fprintf(stderr, "demo: no usable /dev/umm here (scripts/demo.sh boots the VM rig)\n");
		return 1;
	}
	e2e_set_watermarks(false);
	oom0 = vmstat_oom_kills();
	trainer = start_trainer(o, &r, &rfd, &wfd);
	if (trainer < 0)
		return 1;
	printf("demo: %6.1f s  trainer up: %d optimizer-state regions x %llu MiB, host copies %llu MiB on node 0, bound to node 0\n",
	       now_s(), o->nregions, (unsigned long long)(o->region_bytes / MiB),
	       (unsigned long long)(r.host_start[0] / MiB));
	pthread_create(&w.thread, NULL, watcher, &w);

	/* enough to need the trainer's node-0 copies, as in e2e_node_fill */
	e2e_node_free(0, &free0, &tot);
	target = free0 + r.host_start[0] > o->margin ?
			 free0 + r.host_start[0] - o->margin : free0 / 2;
	snprintf(tgt, sizeof(tgt), "%llu", (unsigned long long)target);
	snprintf(rate, sizeof(rate), "%g", o->rate_mib);
	{
		const char *const a[] = {
			"--node", "0", "--force", "--oom-score-adj", "-1000",
			"--rate", rate, "--target", tgt, "--hold", "2",
			"--step", "8M", "--json", NULL,
		};

		printf("demo: %6.1f s  umpressure: take %llu MiB of node 0 (%llu MiB free) at %s MiB/s, hold 2 s\n",
		       now_s(), (unsigned long long)(target / MiB),
		       (unsigned long long)(free0 / MiB), rate);
		fflush(stdout);
		ump = e2e_spawn_umpressure(a, "/tmp/demo-umpressure.json");
	}
	start_steps(o, wfd, target);
	ump_st = finish(&trainer, &trainer_st, ump, rfd, wfd, &r,
			"node 0 memory given back");
	w.stop = true;
	pthread_join(w.thread, NULL);
	e2e_cat("/tmp/demo-umpressure.json", "umpressure: ");
	print_result(&r, &w, trainer_st, ump_st, vmstat_oom_kills() - oom0);
	return 0;
}

/* ---- the container scene (--cgroup) ---------------------------------- */

enum { CG_EV_MAX, CG_EV_OOM, CG_EV_OOM_KILL, CG_EV_COUNT };

static void cg_events(uint64_t ev[CG_EV_COUNT])
{
	static const char *const keys[CG_EV_COUNT] = { "max", "oom",
						       "oom_kill" };
	unsigned long long v;
	char k[64];
	FILE *f = fopen(CG_DIR "/memory.events", "r");

	memset(ev, 0, CG_EV_COUNT * sizeof(*ev));
	if (!f)
		return;
	while (fscanf(f, "%63s %llu", k, &v) == 2)
		for (int i = 0; i < CG_EV_COUNT; i++)
			if (!strcmp(k, keys[i]))
				ev[i] = v;
	fclose(f);
}

static uint64_t cg_current(void)
{
	uint64_t v = 0;

	e2e_read_u64(CG_DIR "/memory.current", &v);
	return v;
}

/*
 * umm.ko's level of our cgroup (1 normal .. 4 critical) from its debugfs
 * table, 0 while it watches none there (no client asked: the control run).
 */
static int cg_level(void)
{
	char line[512], path[256], lvs[16];
	unsigned long long id, use, lim, room;
	int lv = 0;
	FILE *f = fopen(CG_DEBUGFS, "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llu %255s %llu %llu %llu %15s", &id, path,
			   &use, &lim, &room, lvs) != 6 ||
		    strcmp(path, CG_NAME))
			continue;
		for (int i = 1; i < 5; i++)
			if (!strcmp(lvs, level_name(i)))
				lv = i;
	}
	fclose(f);
	return lv;
}

/*
 * The cgroup as the kernel and umm.ko see it: its level (a spill brings
 * it back down within a sample, so it can flap every few ms: a line at
 * most every 500 ms, but at once for critical), the first time it hits
 * its limit, every OOM kill, memory.current now and then.
 */
static void *cg_watcher(void *arg)
{
	struct watch *w = arg;
	uint64_t ev[CG_EV_COUNT], kills = 0, shown_ns = 0;
	unsigned int tick = 0;
	int last = 0;

	while (!w->stop) {
		uint64_t cur = cg_current();
		int lv = cg_level();

		if (cur > w->cg_peak)
			w->cg_peak = cur;
		if (lv > w->max_level[0]) {
			w->max_level[0] = lv;
			w->peak_ns = e2e_now_ns();
		}
		if (lv >= 4 && !w->critical_ns)
			w->critical_ns = e2e_now_ns();
		if (lv && lv != last &&
		    (lv == 4 || e2e_now_ns() - shown_ns >= 500000000ull)) {
			printf("demo: %6.1f s  cgroup level %s%s%s (%llu of %llu MiB used)\n",
			       now_s(), last ? level_name(last) : "",
			       last ? " -> " : "", level_name(lv),
			       (unsigned long long)(cur / MiB),
			       (unsigned long long)(w->cg_limit / MiB));
			shown_ns = e2e_now_ns();
			last = lv;
		} else if (tick % 50 == 0) {
			printf("demo: %6.1f s  cgroup uses %llu of %llu MiB\n",
			       now_s(), (unsigned long long)(cur / MiB),
			       (unsigned long long)(w->cg_limit / MiB));
		}
		cg_events(ev);
		if (ev[CG_EV_MAX] > w->ev0[CG_EV_MAX] && !w->limit_ns) {
			w->limit_ns = e2e_now_ns();
			printf("demo: %6.1f s  cgroup at its memory.max: the kernel reclaims in it (memory.events max %llu)\n",
			       now_s(), (unsigned long long)ev[CG_EV_MAX]);
		}
		if (ev[CG_EV_OOM_KILL] > kills) {
			if (ev[CG_EV_OOM_KILL] > w->ev0[CG_EV_OOM_KILL])
				printf("demo: %6.1f s  the cgroup's OOM killer struck (memory.events oom_kill %llu)\n",
				       now_s(),
				       (unsigned long long)ev[CG_EV_OOM_KILL]);
			kills = ev[CG_EV_OOM_KILL];
		}
		fflush(stdout);
		tick++;
		e2e_sleep_ms(20);
	}
	return NULL;
}

/* "key": number in umpressure's JSON summary; -1 where it is not. */
static double json_num(const char *path, const char *key)
{
	char buf[16384], k[64], *p;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	snprintf(k, sizeof(k), "\"%s\": ", key);
	p = strstr(buf, k);
	return p ? strtod(p + strlen(k), NULL) : -1;
}

/* The spill must free memory: tmpfs (and ramfs) pages stay charged. */
static int spill_ready(const char **dir)
{
	struct statfs sf;

	*dir = getenv("LIBUM_SPILL_DIR");
	if (!*dir || (*dir)[0] != '/') {
		fprintf(stderr, "demo: --cgroup needs LIBUM_SPILL_DIR, an absolute directory on disk\n");
		return -EINVAL;
	}
	if (mkdir(*dir, 0700) && errno != EEXIST)
		return -errno;
	if (statfs(*dir, &sf))
		return -errno;
	if (sf.f_type == 0x01021994 || sf.f_type == 0x858458f6) {
		fprintf(stderr, "demo: LIBUM_SPILL_DIR %s is on tmpfs or ramfs, whose pages are charged to the cgroup too\n",
			*dir);
		return -EINVAL;
	}
	return 0;
}

/*
 * cgroup2 mounted, the memory controller on for the root's children (a
 * v1 hierarchy just unmounted gives it back late), and our cgroup with
 * its limit and no swap.
 */
static int cg_make(const struct opts *o)
{
	char val[32];
	int ret = 0;

	if (access(CG_ROOT "/cgroup.controllers", F_OK) &&
	    mount("none", CG_ROOT, "cgroup2", 0, NULL))
		return -errno;
	for (int i = 0; i < 100; i++) {
		ret = e2e_write_str(CG_ROOT "/cgroup.subtree_control",
				    "+memory");
		if (!ret)
			break;
		e2e_sleep_ms(20);
	}
	if (ret)
		return ret;
	if (mkdir(CG_DIR, 0755) && errno != EEXIST)
		return -errno;
	snprintf(val, sizeof(val), "%llu", (unsigned long long)o->cg_limit);
	ret = e2e_write_str(CG_DIR "/memory.max", val);
	e2e_write_str(CG_DIR "/memory.swap.max", "0");	/* none anyway */
	return ret;
}

static void cg_remove(void)
{
	for (int i = 0; i < 100 && rmdir(CG_DIR) && errno == EBUSY; i++)
		e2e_sleep_ms(20);
}

static void print_cgroup(const struct result *r, const struct watch *w,
			 const uint64_t ev[CG_EV_COUNT], uint64_t cur0,
			 uint64_t fill, const char *json)
{
	const struct um_pressure_stats *ps = &r->ps;

	printf("DEMO-RESULT cgroup=%s cg_limit_mib=%llu cg_start_mib=%llu cg_peak_mib=%llu cg_end_mib=%llu fill_mib=%llu\n",
	       CG_DIR, (unsigned long long)(w->cg_limit / MiB),
	       (unsigned long long)(cur0 / MiB),
	       (unsigned long long)(w->cg_peak / MiB),
	       (unsigned long long)(cg_current() / MiB),
	       (unsigned long long)(fill / MiB));
	printf("DEMO-RESULT cg_events=%llu cg_freed_mib=%llu cg_unmet=%u limit_s=%.2f cg_max=%llu cg_oom=%llu cg_oom_kill=%llu\n",
	       (unsigned long long)ps->cgroup_events,
	       (unsigned long long)(ps->cgroup_freed / MiB), ps->cgroup_unmet,
	       w->limit_ns ? (double)(w->limit_ns - t_zero) / 1e9 : -1.0,
	       (unsigned long long)(ev[CG_EV_MAX] - w->ev0[CG_EV_MAX]),
	       (unsigned long long)(ev[CG_EV_OOM] - w->ev0[CG_EV_OOM]),
	       (unsigned long long)(ev[CG_EV_OOM_KILL] -
				    w->ev0[CG_EV_OOM_KILL]));
	printf("DEMO-RESULT fill_held_mib=%lld fill_mib_s=%.1f fill_peak_cur_mib=%lld\n",
	       (long long)json_num(json, "peak_bytes") / (long long)MiB,
	       json_num(json, "achieved_mib_s"),
	       (long long)json_num(json, "memory_current_peak_bytes") /
		       (long long)MiB);
}

static int run_cgroup_scene(const struct opts *o)
{
	const char *json = "/tmp/demo-umpressure.json", *spill;
	int rfd, wfd, trainer_st = 0, ump_st, ret;
	uint64_t cur0, room0, target, oom0, ev[CG_EV_COUNT];
	char tgt[32], rate[32], low_bp[32];
	struct watch w = { .key = "cgroup", .cg_limit = o->cg_limit };
	struct result r;
	pid_t trainer, ump;

	if (!e2e_have_umm()) {
		fprintf(stderr, "demo: no usable /dev/umm here (scripts/demo.sh boots the VM rig)\n");
		return 1;
	}
	if (spill_ready(&spill))
		return 1;
	ret = cg_make(o);
	if (ret) {
		fprintf(stderr, "demo: cannot make %s with memory.max %llu: %s (no cgroup v2 memory controller?)\n",
			CG_DIR, (unsigned long long)o->cg_limit, strerror(-ret));
		return 1;
	}
	/*
	 * umm.ko's cgroup LOW at 40 % of the limit's room rather than 20 %,
	 * as tests/e2e/cgroup_scene.c does: the spill's writes in the
	 * emulated VM go at about the filler's rate, and at 20 % the first
	 * event came too late on 6.1 for the host copies to be out before
	 * the filler's bytes came in. Put back at the end.
	 */
	if (e2e_read_str(CG_LOW_BP, low_bp, sizeof(low_bp)))
		low_bp[0] = '\0';
	else
		e2e_write_str(CG_LOW_BP, "4000");
	oom0 = vmstat_oom_kills();
	cg_events(w.ev0);
	trainer = start_trainer(o, &r, &rfd, &wfd);
	if (trainer < 0) {
		cg_remove();
		if (low_bp[0])
			e2e_write_str(CG_LOW_BP, low_bp);
		return 1;
	}
	cur0 = cg_current();
	printf("demo: %6.1f s  trainer up in cgroup %s (memory.max %llu MiB): %d optimizer-state regions x %llu MiB, host copies %llu MiB; the cgroup uses %llu MiB\n",
	       now_s(), CG_DIR, (unsigned long long)(o->cg_limit / MiB),
	       o->nregions, (unsigned long long)(o->region_bytes / MiB),
	       (unsigned long long)((r.host_start[0] + r.host_start[1]) / MiB),
	       (unsigned long long)(cur0 / MiB));
	pthread_create(&w.thread, NULL, cg_watcher, &w);

	/*
	 * More than fits beside the trainer's host copies, less than fits
	 * once they are in the spill: the room now, plus the copies, less
	 * what the trainer still needs (CG_SLACK).
	 */
	room0 = o->cg_limit > cur0 ? o->cg_limit - cur0 : 0;
	target = room0 + r.host_start[0] + r.host_start[1];
	target = target > CG_SLACK + 16 * MiB ? target - CG_SLACK : 16 * MiB;
	snprintf(tgt, sizeof(tgt), "%llu", (unsigned long long)target);
	snprintf(rate, sizeof(rate), "%g", o->rate_mib);
	{
		/*
		 * --force: the same fill with the reaction and without it;
		 * umpressure's own cgroup floor would stop it short of the
		 * limit, sparing the trainer in the control run. Bound to
		 * node 1, where the trainer is not: the pressure is the
		 * cgroup's only, not also node 0's.
		 */
		const char *const a[] = {
			"--cgroup", CG_DIR, "--node", "1", "--force",
			"--oom-score-adj", "-1000", "--rate", rate,
			"--target", tgt, "--hold", "2", "--step", "8M",
			"--json", NULL,
		};

		printf("demo: %6.1f s  umpressure --cgroup %s: take %llu MiB (room %llu MiB) at %s MiB/s, hold 2 s\n",
		       now_s(), CG_DIR, (unsigned long long)(target / MiB),
		       (unsigned long long)(room0 / MiB), rate);
		fflush(stdout);
		ump = e2e_spawn_umpressure(a, json);
	}
	start_steps(o, wfd, target);
	ump_st = finish(&trainer, &trainer_st, ump, rfd, wfd, &r,
			"its memory given back");
	w.stop = true;
	pthread_join(w.thread, NULL);
	cg_events(ev);
	e2e_cat(json, "umpressure: ");
	print_result(&r, &w, trainer_st, ump_st, vmstat_oom_kills() - oom0);
	print_cgroup(&r, &w, ev, cur0, target, json);
	cg_remove();
	if (low_bp[0])
		e2e_write_str(CG_LOW_BP, low_bp);
	return 0;
}

static uint64_t parse_u(const char *what, const char *s, uint64_t lo,
			uint64_t hi)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < lo || v > hi) {
		fprintf(stderr, "demo: %s wants a number in %llu..%llu\n", what,
			(unsigned long long)lo, (unsigned long long)hi);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "reference", no_argument, NULL, 'r' },
		{ "steps", required_argument, NULL, 'n' },
		{ "regions", required_argument, NULL, 'R' },
		{ "region-mib", required_argument, NULL, 'M' },
		{ "rate", required_argument, NULL, 'a' },
		{ "no-reaction", no_argument, NULL, 'o' },
		{ "cgroup", no_argument, NULL, 'c' },
		{ "limit-mib", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct opts o = {
		.steps = 30, .nregions = 8, .region_bytes = 16 * MiB,
		.rate_mib = 16, .margin = 64 * MiB, .cg_limit = 320 * MiB,
	};
	int c;

	while ((c = getopt_long(argc, argv, "rn:R:M:a:ocL:h", lo, NULL)) != -1) {
		switch (c) {
		case 'r': o.reference = true; break;
		case 'o': o.no_reaction = true; break;
		case 'c': o.cgroup = true; break;
		case 'L': o.cg_limit = parse_u("--limit-mib", optarg, 64, 65536) * MiB; break;
		case 'n': o.steps = (unsigned int)parse_u("--steps", optarg, 1, 100000); break;
		case 'R': o.nregions = (int)parse_u("--regions", optarg, 1, 1024); break;
		case 'M': o.region_bytes = parse_u("--region-mib", optarg, 1, 1024) * MiB; break;
		case 'a': o.rate_mib = (double)parse_u("--rate", optarg, 1, 4096); break;
		case 'h':
			printf("usage: demo [--reference] [--steps N] [--regions N] [--region-mib M] [--rate MIB_S] [--no-reaction] [--cgroup [--limit-mib M]]\n");
			return 0;
		default:
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "demo: unexpected argument %s\n", argv[optind]);
		return 2;
	}
	t_zero = e2e_now_ns();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (o.reference)
		return run_reference(&o);
	return o.cgroup ? run_cgroup_scene(&o) : run_scene(&o);
}
