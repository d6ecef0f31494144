// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the OOM notifier is the last word. A child bound to node 0
 * allocates without pause until the kernel OOM-kills it; before the kill,
 * every client that declared reclaimable host memory gets an OOM event
 * asking for all of it, clients that declared none get nothing, and the
 * module counts the call; a client that gives nothing back puts nothing
 * off. Nor does a client whose REPORTs claim to give (moving bytes from
 * node to node, freeing nothing), whatever oom_wait_ms says: the kill
 * goes ahead and oom_deferred stays where it was. The kill itself is
 * expected here, so each test tells the VM rig to accept (and require)
 * the OOM report in the kernel log.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"

#define MiB (1ull << 20)

TEST_TIMEOUT_SET(oom_kill_is_announced, 300);

TEST(oom_kill_is_announced)
{
	struct umm_tier_report ta[2] = {
		{ .tier_type = UMM_TIER_HOST_NODE, .tier_id = 0,
		  .resident_bytes = 64 * MiB, .reclaimable_bytes = 48 * MiB },
		{ .tier_type = UMM_TIER_HOST_NODE, .tier_id = 1,
		  .resident_bytes = 64 * MiB, .reclaimable_bytes = 16 * MiB },
	};
	struct umm_tier_report tb = {
		.tier_type = UMM_TIER_HOST_NODE, .tier_id = 0,
		.resident_bytes = 64 * MiB, .reclaimable_bytes = 0,
	};
	long long ooms = vmstat("oom_kill");
	uint64_t calls0 = 0, calls1 = 0, put_off0 = 0, put_off1 = 0;
	struct umm_event ev;
	struct hog hog;
	int a, b, status, seen = 0;
	pid_t pid;

	ASSERT_LE(0, ooms);
	ASSERT_EQ(0, attr_write("enabled", "1"));
	ASSERT_EQ(0, set_oom_score_adj(-1000));
	a = umm_client("holder", 0, 0, 0);
	b = umm_client("unreclaimable", 0, 0, 0);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, umm_report(a, ta, 2, 0));
	ASSERT_EQ(0, umm_report(b, &tb, 1, 0));
	ASSERT_EQ(0, attr_read_u64("oom_calls", &calls0));
	ASSERT_EQ(0, attr_read_u64("oom_deferred", &put_off0));

	/* for the VM rig: this section of the kernel log has an OOM kill */
	printf("# expect-dmesg: Out of memory\n");
	printf("# require-dmesg: Killed process [0-9]+ \\(umm_oom\\)\n");
	fflush(stdout);

	ASSERT_EQ(0, hog_start(&hog, 0, 1000));
	pid = hog.pid;
	ASSERT_EQ(0, hog_run_free(&hog, 16 * MiB));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	hog.pid = 0;
	close(hog.go);
	close(hog.done);
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		TH_LOG("status %#x", status);
	EXPECT_EQ(ooms + 1, vmstat("oom_kill"));
	ASSERT_EQ(0, attr_read_u64("oom_calls", &calls1));
	EXPECT_LT(calls0, calls1);
	ASSERT_EQ(0, attr_read_u64("oom_deferred", &put_off1));
	EXPECT_EQ(put_off0, put_off1) TH_LOG("nobody gave anything back");

	while (umm_next_event(a, &ev, 0) == 1) {
		if (ev.type != UMM_EVENT_OOM)
			continue;
		seen++;
		EXPECT_EQ(UMM_TIER_NONE, ev.tier_type);
		EXPECT_EQ(UMM_LEVEL_CRITICAL, ev.level);
		EXPECT_EQ(UMM_EVENT_F_ACK, ev.flags) TH_LOG("real, not injected");
		EXPECT_EQ(64 * MiB, ev.bytes_to_free)
			TH_LOG("everything reclaimable on every node");
		EXPECT_EQ(0, ev.eta_ms);
	}
	EXPECT_LE(1, seen) TH_LOG("no OOM event before the kill");
	while (umm_next_event(b, &ev, 0) == 1)
		EXPECT_NE(UMM_EVENT_OOM, ev.type) TH_LOG("nothing reclaimable");
	close(a);
	close(b);
}

struct liar {
	int fd;
	volatile int stop;
	int reports;	/* REPORTs that lowered node 0, sent */
};

/*
 * From the first OOM event on, move 32 MiB between node 0 and node 1 every
 * 20 ms: each REPORT lowers what the client holds on one node, and nothing
 * is freed.
 */
static void *lie(void *arg)
{
	struct liar *l = arg;
	struct umm_event ev;

	if (umm_wait_type(l->fd, UMM_EVENT_OOM, &ev, 120000) != 1)
		return NULL;
	for (int i = 0; !l->stop; i++) {
		struct umm_tier_report t[2] = {
			{ .tier_type = UMM_TIER_HOST_NODE, .tier_id = 0,
			  .resident_bytes = (i & 1 ? 64 : 32) * MiB,
			  .reclaimable_bytes = (i & 1 ? 64 : 32) * MiB },
			{ .tier_type = UMM_TIER_HOST_NODE, .tier_id = 1,
			  .resident_bytes = (i & 1 ? 0 : 32) * MiB,
			  .reclaimable_bytes = (i & 1 ? 0 : 32) * MiB },
		};

		if (umm_report(l->fd, t, 2, 0))
			break;
		l->reports++;
		usleep(20 * 1000);
	}
	return NULL;
}

TEST_TIMEOUT_SET(oom_kill_waits_for_no_claim, 300);

TEST(oom_kill_waits_for_no_claim)
{
	struct umm_tier_report t = {
		.tier_type = UMM_TIER_HOST_NODE, .tier_id = 0,
		.resident_bytes = 64 * MiB, .reclaimable_bytes = 64 * MiB,
	};
	long long ooms = vmstat("oom_kill");
	uint64_t put_off0 = 0, put_off1 = 0;
	struct liar l = { .fd = -1 };
	char wait_ms[32] = "";
	struct hog hog;
	pthread_t thr;
	int status;
	pid_t pid;

	ASSERT_LE(0, ooms);
	ASSERT_EQ(0, attr_write("enabled", "1"));
	/* deprecated: readable and writable, and changes nothing */
	ASSERT_LT(0, attr_read("oom_wait_ms", wait_ms, sizeof(wait_ms)));
	ASSERT_EQ(0, attr_write("oom_wait_ms", "1000"));
	ASSERT_EQ(0, set_oom_score_adj(-1000));
	l.fd = umm_client("liar", 0, 0, 0);
	ASSERT_LE(0, l.fd);
	ASSERT_EQ(0, umm_report(l.fd, &t, 1, 0));
	ASSERT_EQ(0, attr_read_u64("oom_deferred", &put_off0));
	ASSERT_EQ(0, pthread_create(&thr, NULL, lie, &l));

	printf("# expect-dmesg: Out of memory\n");
	printf("# require-dmesg: Killed process [0-9]+ \\(umm_oom\\)\n");
	fflush(stdout);

	ASSERT_EQ(0, hog_start(&hog, 0, 1000));
	pid = hog.pid;
	ASSERT_EQ(0, hog_run_free(&hog, 16 * MiB));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	hog.pid = 0;
	close(hog.go);
	close(hog.done);
	l.stop = 1;
	pthread_join(thr, NULL);
	attr_write("oom_wait_ms", wait_ms);
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		TH_LOG("status %#x", status);
	EXPECT_EQ(ooms + 1, vmstat("oom_kill"));
	EXPECT_LT(0, l.reports) TH_LOG("the liar never got its OOM event");
	ASSERT_EQ(0, attr_read_u64("oom_deferred", &put_off1));
	EXPECT_EQ(put_off0, put_off1)
		TH_LOG("a kill put off %llu times by %d REPORTs that freed nothing",
		       (unsigned long long)(put_off1 - put_off0), l.reports);
	close(l.fd);
}

TEST_HARNESS_MAIN
