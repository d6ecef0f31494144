// SPDX-License-Identifier: GPL-2.0
/*
 * Description: what umm.ko costs an unrelated container's OOM. While a
 * hog bound to node 0 runs into system-wide OOM kills again and again, a
 * cgroup with memory.max 32 MiB that has nothing to do with umm.ko is
 * driven into its own OOM kill 40 times; each kill's latency is the time
 * from the last allocation step to the reaped SIGKILL. The memory
 * cgroup's OOM takes the same oom_lock as the system-wide one, so a
 * notifier that sleeps there shows up here.
 *
 * UMM_OOMLAT_CLIENT chooses who holds a client meanwhile: "honest" (the
 * default: 64 MiB declared reclaimable on node 0, which it never frees),
 * "liar" (from the first OOM event on, moves 32 MiB between the nodes
 * every 20 ms, REPORTs that claim to free and free nothing); without
 * /dev/umm (the rig's --no-module) there is none, the baseline. The
 * figures are printed for the side-by-side table; the test fails only
 * when an OOM was deferred (oom_deferred rose).
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"

#define MiB (1ull << 20)
#define CG "/sys/fs/cgroup"
#define SAMPLES 40

TEST_TIMEOUT_SET(unrelated_memcg_oom_latency, 600);

static volatile int stop;

/* System-wide OOM kills on node 0, one after another, until stop. */
static void *global_ooms(void *arg)
{
	int *kills = arg;

	while (!stop) {
		struct hog h;
		int status;

		if (hog_start(&h, 0, 1000))
			break;
		if (hog_run_free(&h, 16 * MiB))
			break;
		waitpid(h.pid, &status, 0);
		close(h.go);
		close(h.done);
		*kills += WIFSIGNALED(status);
	}
	return NULL;
}

struct holder {
	int fd;
	int liar;
};

static void *hold(void *arg)
{
	struct holder *c = arg;
	struct umm_event ev;
	int lying = 0;

	for (int i = 0; !stop; i++) {
		struct umm_tier_report t[2] = {
			{ .tier_type = UMM_TIER_HOST_NODE, .tier_id = 0,
			  .resident_bytes = (i & 1 ? 64 : 32) * MiB,
			  .reclaimable_bytes = (i & 1 ? 64 : 32) * MiB },
			{ .tier_type = UMM_TIER_HOST_NODE, .tier_id = 1,
			  .resident_bytes = (i & 1 ? 0 : 32) * MiB,
			  .reclaimable_bytes = (i & 1 ? 0 : 32) * MiB },
		};

		while (umm_next_event(c->fd, &ev, lying ? 0 : 20) == 1) {
			if (ev.type == UMM_EVENT_OOM)
				lying = c->liar;
			if (ev.flags & UMM_EVENT_F_ACK)
				umm_ack(c->fd, ev.seq, 0, NULL);
		}
		if (lying) {
			umm_report(c->fd, t, 2, 0);
			usleep(20 * 1000);
		}
	}
	return NULL;
}

/* One memory cgroup OOM kill in @cg: ns from the last step to the reap. */
static int64_t memcg_oom_ns(const char *procs)
{
	int go[2], ready[2], status;
	uint64_t t0;
	char c;
	pid_t pid;

	if (pipe(go) || pipe(ready))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		char *p = mmap(NULL, 96 * MiB, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		set_oom_score_adj(1000);
		if (attr_write(procs, "0") || p == MAP_FAILED)
			_exit(20);
		madvise(p, 96 * MiB, MADV_NOHUGEPAGE);
		memset(p, 1, 24 * MiB);
		if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(21);
		memset(p + 24 * MiB, 1, 72 * MiB);
		_exit(22);
	}
	close(go[0]);
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1)
		return -ECHILD;
	t0 = now_ns();
	if (write(go[1], "g", 1) != 1)
		return -EPIPE;
	if (waitpid(pid, &status, 0) != pid)
		return -ECHILD;
	close(go[1]);
	close(ready[0]);
	if (!WIFSIGNALED(status))
		return -EIO;
	return (int64_t)(now_ns() - t0);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

TEST(unrelated_memcg_oom_latency)
{
	const char *mode = getenv("UMM_OOMLAT_CLIENT");
	struct umm_tier_report t = {
		.tier_type = UMM_TIER_HOST_NODE, .tier_id = 0,
		.resident_bytes = 64 * MiB, .reclaimable_bytes = 64 * MiB,
	};
	uint64_t deferred0 = 0, deferred1 = 0, calls0 = 0, calls1 = 0;
	struct holder h = { .fd = -1 };
	pthread_t g, ht;
	int64_t lat[SAMPLES];
	int global = 0, n = 0, module = !access("/dev/umm", F_OK);

	if (!mode)
		mode = "honest";
	if (!module)
		mode = "none";
	printf("# expect-dmesg: Out of memory|oom\n");
	fflush(stdout);
	ASSERT_EQ(0, set_oom_score_adj(-1000));
	if (access(CG "/cgroup.controllers", F_OK))
		ASSERT_EQ(0, mount("none", CG, "cgroup2", 0, NULL));
	ASSERT_EQ(0, attr_write(CG "/cgroup.subtree_control", "+memory"));
	if (mkdir(CG "/lat", 0755))
		ASSERT_EQ(EEXIST, errno);
	ASSERT_EQ(0, attr_write(CG "/lat/memory.max", "33554432"));
	if (module) {
		h.liar = !strcmp(mode, "liar");
		h.fd = umm_client(mode, 0, 0, 0);
		ASSERT_LE(0, h.fd);
		ASSERT_EQ(0, umm_report(h.fd, &t, 1, 0));
		ASSERT_EQ(0, attr_read_u64("oom_deferred", &deferred0));
		ASSERT_EQ(0, attr_read_u64("oom_calls", &calls0));
		ASSERT_EQ(0, pthread_create(&ht, NULL, hold, &h));
	}
	ASSERT_EQ(0, pthread_create(&g, NULL, global_ooms, &global));
	sleep(2);
	for (int i = 0; i < SAMPLES; i++) {
		int64_t ns = memcg_oom_ns(CG "/lat/cgroup.procs");

		if (ns >= 0)
			lat[n++] = ns;
		usleep(100 * 1000);
	}
	stop = 1;
	pthread_join(g, NULL);
	if (module) {
		pthread_join(ht, NULL);
		ASSERT_EQ(0, attr_read_u64("oom_deferred", &deferred1));
		ASSERT_EQ(0, attr_read_u64("oom_calls", &calls1));
		close(h.fd);
	}
	rmdir(CG "/lat");
	ASSERT_LT(0, n);
	qsort(lat, n, sizeof(lat[0]), cmp_i64);
	printf("# OOMLAT client=%s memcg_ooms=%d median_ms=%.1f p90_ms=%.1f max_ms=%.1f global_kills=%d oom_calls=%llu oom_deferred=%llu\n",
	       mode, n, lat[n / 2] / 1e6, lat[n * 9 / 10] / 1e6,
	       lat[n - 1] / 1e6, global,
	       (unsigned long long)(calls1 - calls0),
	       (unsigned long long)(deferred1 - deferred0));
	EXPECT_LT(0, global) TH_LOG("no system-wide OOM ran meanwhile");
	EXPECT_EQ(deferred0, deferred1) TH_LOG("OOMs were deferred");
}

TEST_HARNESS_MAIN
