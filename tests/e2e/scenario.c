/* SPDX-License-Identifier: MIT */
/*
 * scenario.c - the node pressure scenarios' common run (see scenario.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"
#include "internal.h"
#include "pressure.h"
#include "scenario.h"
#include "spill.h"

enum { MSG_READY = 1, MSG_DONE = 2 };

struct msg {
	int kind;
	int error;
	struct scenario_result r;
};

static void send_msg(int fd, const struct msg *m)
{
	if (write(fd, m, sizeof(*m)) != (ssize_t)sizeof(*m))
		_exit(3);
}

static void fill_stats(struct trainer *t, struct scenario_result *r)
{
	struct um_pressure_stats ps;
	struct um_spill_stats ss;

	struct um_stats st = { .size = sizeof(st) };

	trainer_where(t, r->host_end, 2, &r->spill_end, NULL);
	if (!um_stats_get(t->ctx, &st)) {
		r->host_peak[0] = st.host[0].peak;
		r->host_peak[1] = st.host[1].peak;
		r->spill_peak = st.spill.peak;
		r->moves_paged = st.node_moves_paged;
		r->moves_copied = st.node_moves_copied;
	}
	if (!um__pressure_stats(t->ctx, &ps)) {
		r->umm_events = ps.umm_events;
		r->acks = ps.acks;
		r->acked_bytes = ps.acked_bytes;
		r->shed_bytes = ps.shed_bytes;
		r->sum_ack_ns = ps.sum_ack_ns;
		r->max_ack_ns = ps.max_ack_ns;
		r->sources = ps.sources;
		r->fallbacks = ps.fallbacks;
		r->first_eta_ms = ps.first_eta_ms;
		if (ps.first_event_ns)
			r->first_pressure_ns = ps.first_event_ns;
	}
	if (t->ctx->spill) {
		um__spill_stats(t->ctx->spill, &ss);
		r->spill_writes = ss.writes;
		r->spill_reads = ss.reads;
		r->spill_write_bytes = ss.write_bytes;
		r->spill_read_bytes = ss.read_bytes;
		r->spill_write_ns = ss.write_ns;
		r->spill_read_ns = ss.read_ns;
		r->spill_direct = ss.direct;
	}
	pthread_mutex_lock(&t->lock);
	r->first_pressure_ns = t->first_pressure_ns;
	r->max_level = t->max_level;
	r->steered_away = t->steered_away;
	pthread_mutex_unlock(&t->lock);
}

/* The trainer: steps until the parent says stop, then verifies. */
static void trainer_child(const struct scenario *sc, int wfd, int rfd)
{
	struct trainer_cfg cfg = {
		.nregions = sc->nregions,
		.region_bytes = sc->region_bytes,
		.sim_capacity = sc->region_bytes,
		.spill_dir = sc->spill_dir,
	};
	struct msg m = { .kind = MSG_READY };
	struct trainer t;
	char c;

	e2e_oom_adj(1000);
	e2e_no_mlock();
	e2e_bind_node(0);
	setenv("LIBUM_PRESSURE", sc->reaction ? "1" : "0", 1);
	m.error = trainer_init(&t, &cfg);
	trainer_where(&t, m.r.host_start, 2, NULL, NULL);
	send_msg(wfd, &m);
	if (m.error) {
		trainer_dump_log(&t);
		_exit(1);
	}
	fcntl(rfd, F_SETFL, O_NONBLOCK);
	for (;;) {
		ssize_t n = read(rfd, &c, 1);

		if (n >= 0)	/* a byte or end of file: stop */
			break;
		m.error = trainer_step(&t);
		if (m.error)
			break;
		if (getenv("E2E_DEBUG")) {
			uint64_t h[2] = { 0, 0 }, sp = 0, dev = 0, f0 = 0, t0 = 0;
			uint64_t rss[2] = { 0, 0 };
			struct um_stats st = { .size = sizeof(st) };

			trainer_where(&t, h, 2, &sp, &dev);
			e2e_node_free(0, &f0, &t0);
			e2e_self_node_bytes(rss, 2);
			um_stats_get(t.ctx, &st);
			printf("# step %llu: rss node0 %llu node1 %llu MiB, pool %llu MiB in %llu chunks\n",
			       (unsigned long long)t.steps,
			       (unsigned long long)(rss[0] / MiB),
			       (unsigned long long)(rss[1] / MiB),
			       (unsigned long long)(st.pool_bytes / MiB),
			       (unsigned long long)st.pool_chunks);
			printf("# step %llu: host node0 %llu MiB node1 %llu MiB spill %llu MiB dev %llu MiB; node0 free %llu MiB\n",
			       (unsigned long long)t.steps,
			       (unsigned long long)(h[0] / MiB),
			       (unsigned long long)(h[1] / MiB),
			       (unsigned long long)(sp / MiB),
			       (unsigned long long)(dev / MiB),
			       (unsigned long long)(f0 / MiB));
			fflush(stdout);
		}
	}
	m.kind = MSG_DONE;
	m.r.steps = t.steps;
	m.r.trainer_error = m.error;
	fill_stats(&t, &m.r);
	m.r.bad_regions = trainer_verify(&t);
	trainer_dump_log(&t);
	fflush(stdout);
	send_msg(wfd, &m);
	trainer_fini(&t);
	_exit(0);
}

int scenario_run(const struct scenario *sc, struct scenario_result *res)
{
	int to_parent[2], to_child[2], ret;
	uint64_t free0, total0, target, margin;
	char tgt[32], rate[32];
	struct e2e_sampler smp;
	pid_t trainer, ump1 = -1, ump0;
	struct msg m;

	memset(res, 0, sizeof(*res));
	res->rate_mib = sc->rate_mib;
	if (res->rate_mib <= 0) {
		unsigned int r;

		ret = e2e_fill_rate(&r);
		if (ret)
			return ret;
		res->rate_mib = r;
	}
	signal(SIGPIPE, SIG_IGN);
	margin = sc->margin ? sc->margin : 64 * MiB;
	e2e_set_watermarks(true);
	e2e_oom_adj(-1000);
	if (e2e_node_free(0, &free0, &total0))
		return -ENOENT;
	if (pipe(to_parent) || pipe(to_child))
		return -errno;
	fflush(stdout);
	trainer = fork();
	if (trainer < 0)
		return -errno;
	if (trainer == 0) {
		close(to_parent[0]);
		close(to_child[1]);
		trainer_child(sc, to_parent[1], to_child[0]);
	}
	close(to_parent[1]);
	close(to_child[0]);
	ret = e2e_full_read(to_parent[0], &m, sizeof(m));
	if (ret || m.kind != MSG_READY || m.error) {
		printf("# %s: trainer did not start (%d)\n", sc->name,
		       ret ? ret : m.error);
		kill(trainer, SIGKILL);
		e2e_wait(trainer);
		return ret ? ret : m.error;
	}
	memcpy(res->host_start, m.r.host_start, sizeof(res->host_start));

	e2e_sampler_start(&smp, 0);
	res->t_start_ns = smp.t0;
	if (sc->fill_node1) {
		static const char *const a1[] = {
			"--node", "1", "--until-level", "low", "--hold", "600",
			"--rate", "64", "--step", "8M", "--json", NULL,
		};

		ump1 = e2e_spawn_umpressure(a1, "/tmp/umpressure-node1.json");
		for (int i = 0; i < 6000 && e2e_node_level(1) < 2; i++)
			e2e_sleep_ms(10);
		printf("# %s: node 1 level %d before node 0 fills\n", sc->name,
		       e2e_node_level(1));
	}
	/*
	 * Size the pressure from what the trainer took: with the reaction,
	 * its host copies (movable) leave node 0 and umpressure's target fits
	 * with margin to spare above the critical watermark; without it, the
	 * same target needs memory the trainer holds.
	 */
	{
		uint64_t free1 = 0, tot, movable = res->host_start[0];
		uint64_t kmin = 0, pcp_cap = 0, pcp_now = 0, most;

		e2e_node_free(0, &free1, &tot);
		/*
		 * The pages the moved copies leave go to the per-CPU free
		 * lists first, up to their capacity, and the allocator's
		 * watermarks do not count those. When reclaim finds nothing
		 * to take (no swap, no page cache: this VM), 6.1 drains the
		 * lists only after reclaim made progress, so never before the
		 * OOM kill. Seen at 512 MiB/s: all 112 MiB of copies on node
		 * 1, node 0 at its min watermark with 54 MiB on those lists,
		 * the trainer killed. The fill must leave them room, or no
		 * reaction can make it fit; and without the reaction it must
		 * still take node 0 8 MiB past its min watermark, counting
		 * what the lists hold now as free: 6.12 hands those pages out
		 * under pressure (its control survived a fill sized on
		 * MemFree alone, 44 MiB on the lists at the start).
		 */
		if (!e2e_node_kept(0, &kmin, &pcp_cap, &pcp_now)) {
			most = movable + kmin > pcp_now + 8 * MiB ?
				       movable + kmin - pcp_now - 8 * MiB : 0;
			margin = margin + pcp_cap < most ? margin + pcp_cap :
							   most > margin ? most :
							   margin;
			printf("# %s: node 0 min watermark %llu MiB, per-CPU lists hold up to %llu MiB (%llu now): %llu MiB left with the copies gone\n",
			       sc->name, (unsigned long long)(kmin / MiB),
			       (unsigned long long)(pcp_cap / MiB),
			       (unsigned long long)(pcp_now / MiB),
			       (unsigned long long)(margin / MiB));
		}
		target = free1 + movable > margin ? free1 + movable - margin :
						    free1 / 2;
		printf("# %s: trainer took %llu MiB of node 0 (%llu MiB host copies)\n",
		       sc->name, (unsigned long long)((free0 - free1) / MiB),
		       (unsigned long long)(movable / MiB));
		free0 = free1;
	}
	snprintf(tgt, sizeof(tgt), "%llu", (unsigned long long)target);
	snprintf(rate, sizeof(rate), "%g", res->rate_mib);
	{
		const char *const a0[] = {
			"--node", "0", "--force", "--oom-score-adj", "-1000",
			"--rate", rate, "--target", tgt, "--hold", "2",
			"--step", "8M", "--json", NULL,
		};

		printf("# %s: node 0 has %llu MiB free; umpressure takes %llu MiB at %s MiB/s\n",
		       sc->name, (unsigned long long)(free0 / MiB),
		       (unsigned long long)(target / MiB), rate);
		ump0 = e2e_spawn_umpressure(a0, "/tmp/umpressure-node0.json");
	}
	/* wait for umpressure; note when the trainer dies, if it does */
	while (ump0 > 0) {
		int st;

		if (!res->trainer_end_ns &&
		    waitpid(trainer, &st, WNOHANG) == trainer) {
			res->trainer_end_ns = e2e_now_ns();
			res->trainer_status = st;
			trainer = -1;
		}
		if (waitpid(ump0, &st, WNOHANG) == ump0) {
			res->umpressure_exited = true;
			res->umpressure_status = e2e_status_code(st);
			break;
		}
		e2e_sleep_ms(10);
	}
	e2e_sleep_ms(1000);
	/* stop the trainer; it verifies and reports (unless it was killed) */
	if (trainer > 0 && write(to_child[1], "s", 1) != 1)
		printf("# %s: cannot signal the trainer\n", sc->name);
	ret = e2e_full_read(to_parent[0], &m, sizeof(m));
	if (trainer > 0) {
		res->trainer_status = e2e_wait(trainer);
		res->trainer_end_ns = e2e_now_ns();
	}
	res->trainer_killed = WIFSIGNALED(res->trainer_status) &&
			      WTERMSIG(res->trainer_status) == SIGKILL;
	if (!ret && m.kind == MSG_DONE) {
		struct scenario_result keep = *res;

		*res = m.r;
		res->umpressure_exited = keep.umpressure_exited;
		res->umpressure_status = keep.umpressure_status;
		res->trainer_killed = keep.trainer_killed;
		res->trainer_status = keep.trainer_status;
		res->rate_mib = keep.rate_mib;
		memcpy(res->host_start, keep.host_start,
		       sizeof(res->host_start));
		res->t_start_ns = keep.t_start_ns;
		res->trainer_end_ns = keep.trainer_end_ns;
	}
	if (ump1 > 0) {
		kill(ump1, SIGTERM);
		e2e_wait(ump1);
	}
	e2e_sampler_stop(&smp);
	res->low_ns = smp.first_ns[2];
	res->medium_ns = smp.first_ns[3];
	res->critical_ns = smp.first_ns[4];
	res->max_node_level = smp.max_level;
	close(to_parent[0]);
	close(to_child[1]);
	e2e_cat("/tmp/umpressure-node0.json", "umpressure node0: ");
	if (sc->fill_node1)
		e2e_cat("/tmp/umpressure-node1.json", "umpressure node1: ");
	scenario_report(sc, res);
	return 0;
}

static double rel_ms(uint64_t t, uint64_t t0)
{
	return t ? e2e_ms(t - t0) : -1;
}

static double span_ms(uint64_t from, uint64_t to)
{
	return from && to ? (double)((int64_t)to - (int64_t)from) / 1e6 : -1;
}

/*
 * One line of key=value pairs for tests/soak to add up: a killed trainer
 * loses all its bytes, a surviving one those of every region whose
 * checksum differs. Times in ms, -1 where the moment never came.
 */
static void scenario_result_line(const struct scenario *sc,
				 const struct scenario_result *r)
{
	uint64_t lost = (uint64_t)(r->trainer_killed ? sc->nregions :
					 r->bad_regions) * sc->region_bytes;
	uint64_t mod_max = 0, oom_calls = 0, oom_deferred = 0;

	if (e2e_read_u64(UMM_SYSFS "/ack_latency_ns_max", &mod_max))
		mod_max = 0;
	/* this boot so far; 0 from a module without them */
	if (e2e_read_u64(UMM_SYSFS "/oom_calls", &oom_calls))
		oom_calls = 0;
	if (e2e_read_u64(UMM_SYSFS "/oom_deferred", &oom_deferred))
		oom_deferred = 0;
	printf("# E2E-RESULT scenario=%s rate_mib=%g killed=%d error=%d lost_bytes=%llu steps=%llu umpressure_exit=%d events=%llu acks=%llu ack_avg_ms=%.1f ack_max_ms=%.1f module_ack_max_ms=%.1f max_level=%d first_event_ms=%.0f eta_ms=%u low_ms=%.0f critical_ms=%.0f lead_ms=%.0f low_to_critical_ms=%.0f killed_after_low_ms=%.0f oom_calls=%llu oom_deferred=%llu\n",
	       sc->name, r->rate_mib, r->trainer_killed, r->trainer_error,
	       (unsigned long long)lost, (unsigned long long)r->steps,
	       r->umpressure_status, (unsigned long long)r->umm_events,
	       (unsigned long long)r->acks,
	       r->acks ? e2e_ms(r->sum_ack_ns / r->acks) : 0,
	       e2e_ms(r->max_ack_ns), e2e_ms(mod_max), r->max_node_level,
	       span_ms(r->t_start_ns, r->first_pressure_ns), r->first_eta_ms,
	       span_ms(r->t_start_ns, r->low_ns),
	       span_ms(r->t_start_ns, r->critical_ns),
	       span_ms(r->first_pressure_ns, r->critical_ns),
	       span_ms(r->low_ns, r->critical_ns),
	       r->trainer_killed ? span_ms(r->low_ns, r->trainer_end_ns) : -1,
	       (unsigned long long)oom_calls,
	       (unsigned long long)oom_deferred);
}

void scenario_report(const struct scenario *sc,
		     const struct scenario_result *r)
{
	static const char *const lv[] = { "?", "normal", "low", "medium",
					  "critical" };
	uint64_t t0 = r->t_start_ns;

	printf("# %s: trainer %s after %llu steps, %d region(s) differ, umpressure exit %d\n",
	       sc->name, r->trainer_killed ? "KILLED" : "finished",
	       (unsigned long long)r->steps, r->bad_regions,
	       r->umpressure_status);
	printf("# %s: node 0 level max %s; first low %.0f ms, medium %.0f ms, critical %.0f ms (from start; -1 never)\n",
	       sc->name, lv[r->max_node_level < 5 ? r->max_node_level : 0],
	       rel_ms(r->low_ns, t0), rel_ms(r->medium_ns, t0),
	       rel_ms(r->critical_ns, t0));
	if (r->low_ns && r->critical_ns)
		printf("# %s: lead time node low -> critical: %.0f ms\n",
		       sc->name, e2e_ms(r->critical_ns - r->low_ns));
	if (r->trainer_killed && r->low_ns)
		printf("# %s: trainer OOM-killed %.0f ms after node 0 went low (the lead a client would have had)\n",
		       sc->name, e2e_ms(r->trainer_end_ns - r->low_ns));
	if (r->first_pressure_ns && r->critical_ns)
		printf("# %s: lead time first event -> critical: %.0f ms\n",
		       sc->name,
		       (double)((int64_t)r->critical_ns -
				(int64_t)r->first_pressure_ns) / 1e6);
	else if (r->first_pressure_ns)
		printf("# %s: first event at %.0f ms (eta to critical then %u ms); node 0 never went critical\n",
		       sc->name, rel_ms(r->first_pressure_ns, t0),
		       r->first_eta_ms);
	printf("# %s: host copies node0 %llu -> %llu MiB, node1 %llu -> %llu MiB (peak %llu), spill %llu MiB (peak %llu)\n",
	       sc->name, (unsigned long long)(r->host_start[0] / MiB),
	       (unsigned long long)(r->host_end[0] / MiB),
	       (unsigned long long)(r->host_start[1] / MiB),
	       (unsigned long long)(r->host_end[1] / MiB),
	       (unsigned long long)(r->host_peak[1] / MiB),
	       (unsigned long long)(r->spill_end / MiB),
	       (unsigned long long)(r->spill_peak / MiB));
	printf("# %s: new host copies steered off node 0 %llu time(s); moves between nodes: %llu by move_pages, %llu copied\n",
	       sc->name, (unsigned long long)r->steered_away,
	       (unsigned long long)r->moves_paged,
	       (unsigned long long)r->moves_copied);
	printf("# %s: umm events %llu, ACKs %llu (%llu MiB freed), shed %llu MiB, event-to-ACK avg %.1f ms max %.1f ms, sources 0x%x, fallbacks %u\n",
	       sc->name, (unsigned long long)r->umm_events,
	       (unsigned long long)r->acks,
	       (unsigned long long)(r->acked_bytes / MiB),
	       (unsigned long long)(r->shed_bytes / MiB),
	       r->acks ? e2e_ms(r->sum_ack_ns / r->acks) : 0,
	       e2e_ms(r->max_ack_ns), r->sources, r->fallbacks);
	{
		uint64_t avg = 0, max = 0, acks = 0;

		if (!e2e_read_u64(UMM_SYSFS "/ack_latency_ns_avg", &avg) &&
		    !e2e_read_u64(UMM_SYSFS "/ack_latency_ns_max", &max) &&
		    !e2e_read_u64(UMM_SYSFS "/acks", &acks))
			printf("# %s: module side, this boot so far: %llu ACKs, event-to-ACK avg %.1f ms max %.1f ms\n",
			       sc->name, (unsigned long long)acks, e2e_ms(avg),
			       e2e_ms(max));
	}
	scenario_result_line(sc, r);
	if (r->spill_writes || r->spill_reads)
		printf("# %s: spill %s: %llu writes %.1f MiB/s, %llu reads %.1f MiB/s\n",
		       sc->name, r->spill_direct ? "O_DIRECT" : "buffered",
		       (unsigned long long)r->spill_writes,
		       r->spill_write_ns ? (double)r->spill_write_bytes / MiB /
						   ((double)r->spill_write_ns / 1e9) : 0,
		       (unsigned long long)r->spill_reads,
		       r->spill_read_ns ? (double)r->spill_read_bytes / MiB /
						  ((double)r->spill_read_ns / 1e9) : 0);
}
