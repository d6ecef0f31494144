// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the REPORT, ACK and QUERY ioctls. A report is validated whole
 * (sizes, flags, tier types and ids, duplicates, reclaimable > resident,
 * count, pointers) and taken whole or not at all; it replaces or updates the
 * books, which show in the per-node and per-GPU sums and disappear when the
 * client closes. ACK matches events that asked to free and measures the
 * latency, which lands in one bucket of the client's debugfs row; QUERY
 * describes every node and the GPUs in use.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"

#define MiB (1ull << 20)

static uint64_t node_sum(const char *what, int nid)
{
	char p[128];
	uint64_t v = ~0ull;

	snprintf(p, sizeof(p), "nodes/node%d/%s", nid, what);
	attr_read_u64(p, &v);
	return v;
}

static uint64_t gpu_sum(const char *what, int id)
{
	char p[128];
	uint64_t v = ~0ull;

	snprintf(p, sizeof(p), "gpus/gpu%d/%s", id, what);
	attr_read_u64(p, &v);
	return v;
}

/* umm.ko's latency buckets: upper bounds in ms, then one for the rest. */
#define ACK_BUCKETS	14
static const uint64_t ack_le_ms[ACK_BUCKETS - 1] = {
	1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000,
};

static int ack_bucket(uint64_t lat_ns)
{
	int i;

	for (i = 0; i < ACK_BUCKETS - 1; i++)
		if (lat_ns <= ack_le_ms[i] * 1000000)
			break;
	return i;
}

/*
 * The latency sum and bucket counts of our own row in debugfs clients: 0,
 * or -1 when the header does not name these buckets or the row is missing
 * or malformed.
 */
static int my_ack_buckets(uint64_t *sum, uint64_t *le)
{
	static char buf[65536];
	char want[32], *line, *last, *prev, *p;
	int i;

	if (attr_read(UMM_DEBUGFS "/clients", buf, sizeof(buf)) < 0 ||
	    !strstr(buf, " ack_ns_sum ack_ms_le(1,2,5,10,20,50,100,200,500,1000,2000,5000,10000,inf)\n"))
		return -1;
	snprintf(want, sizeof(want), "\n%d ", getpid());
	line = strstr(buf, want);
	if (!line)
		return -1;
	line++;
	line[strcspn(line, "\n")] = '\0';
	last = strrchr(line, ' ');
	if (!last || last == line)
		return -1;
	*last++ = '\0';
	prev = strrchr(line, ' ');
	if (!prev)
		return -1;
	*sum = strtoull(prev + 1, NULL, 10);
	for (i = 0, p = last; i < ACK_BUCKETS; i++) {
		le[i] = strtoull(p, &p, 10);
		if (*p != (i == ACK_BUCKETS - 1 ? '\0' : ','))
			return -1;
		p++;
	}
	return 0;
}

static uint64_t ack_count(const uint64_t *le)
{
	uint64_t n = 0;

	for (int i = 0; i < ACK_BUCKETS; i++)
		n += le[i];
	return n;
}

FIXTURE(cl) {
	int fd;
	uint64_t res0, rec0, res1, used3;
};

FIXTURE_SETUP(cl)
{
	self->fd = umm_client("report", 0, 0, 0);
	ASSERT_LE(0, self->fd);
	self->res0 = node_sum("resident_bytes", 0);
	self->rec0 = node_sum("reclaimable_bytes", 0);
	self->res1 = node_sum("resident_bytes", 1);
	self->used3 = gpu_sum("used_bytes", 3);
}

FIXTURE_TEARDOWN(cl)
{
	close(self->fd);
}

static int report_raw(int fd, struct umm_report *r)
{
	return ioctl(fd, UMM_IOC_REPORT, r) < 0 ? -errno : 0;
}

TEST_F(cl, books_show_in_sums_and_go_on_close)
{
	struct umm_tier_report t[3] = {
		{ UMM_TIER_HOST_NODE, 0, 64 * MiB, 16 * MiB },
		{ UMM_TIER_HOST_NODE, 1, 8 * MiB, 0 },
		{ UMM_TIER_GPU, 3, 100 * MiB, 50 * MiB },
	};

	ASSERT_EQ(0, umm_report(self->fd, t, 3, 0));
	EXPECT_EQ(self->res0 + 64 * MiB, node_sum("resident_bytes", 0));
	EXPECT_EQ(self->rec0 + 16 * MiB, node_sum("reclaimable_bytes", 0));
	EXPECT_EQ(self->res1 + 8 * MiB, node_sum("resident_bytes", 1));
	EXPECT_EQ(self->used3 + 100 * MiB, gpu_sum("used_bytes", 3));
	close(self->fd);
	self->fd = umm_client("report2", 0, 0, 0);
	ASSERT_LE(0, self->fd);
	EXPECT_EQ(self->res0, node_sum("resident_bytes", 0));
	EXPECT_EQ(self->rec0, node_sum("reclaimable_bytes", 0));
	EXPECT_EQ(self->used3, gpu_sum("used_bytes", 3));
}

TEST_F(cl, replace_and_update)
{
	struct umm_tier_report a[2] = {
		{ UMM_TIER_HOST_NODE, 0, 64 * MiB, 16 * MiB },
		{ UMM_TIER_HOST_NODE, 1, 8 * MiB, 0 },
	};
	struct umm_tier_report b = { UMM_TIER_HOST_NODE, 1, 4 * MiB, 4 * MiB };

	ASSERT_EQ(0, umm_report(self->fd, a, 2, 0));
	/* update: node 1 changes, node 0 stays */
	ASSERT_EQ(0, umm_report(self->fd, &b, 1, UMM_REPORT_F_UPDATE));
	EXPECT_EQ(self->res0 + 64 * MiB, node_sum("resident_bytes", 0));
	EXPECT_EQ(self->res1 + 4 * MiB, node_sum("resident_bytes", 1));
	/* replace: node 0 is no longer listed, so it becomes 0 */
	ASSERT_EQ(0, umm_report(self->fd, &b, 1, 0));
	EXPECT_EQ(self->res0, node_sum("resident_bytes", 0));
	EXPECT_EQ(self->res1 + 4 * MiB, node_sum("resident_bytes", 1));
	/* an empty replace clears everything */
	ASSERT_EQ(0, umm_report(self->fd, NULL, 0, 0));
	EXPECT_EQ(self->res1, node_sum("resident_bytes", 1));
}

TEST_F(cl, bad_reports_refused_and_change_nothing)
{
	struct umm_tier_report good = { UMM_TIER_HOST_NODE, 0, 32 * MiB, 0 };
	static const struct umm_tier_report bad[][2] = {
		{ { 0, 0, MiB, 0 } },				/* type 0 */
		{ { 3, 0, MiB, 0 } },				/* type 3 */
		{ { UMM_TIER_HOST_NODE, 2, MiB, 0 } },		/* no node 2 */
		{ { UMM_TIER_HOST_NODE, 1u << 31, MiB, 0 } },
		{ { UMM_TIER_GPU, UMM_MAX_GPUS, MiB, 0 } },
		{ { UMM_TIER_HOST_NODE, 0, MiB, MiB + 1 } },	/* rec > res */
		{ { UMM_TIER_HOST_NODE, 1, MiB, 0 },		/* duplicate */
		  { UMM_TIER_HOST_NODE, 1, 2 * MiB, 0 } },
		{ { UMM_TIER_HOST_NODE, 1, MiB, 0 },		/* 2nd bad */
		  { UMM_TIER_GPU, 99, MiB, 0 } },
	};
	struct umm_report r;

	ASSERT_EQ(0, umm_report(self->fd, &good, 1, 0));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		unsigned int n = bad[i][1].tier_type ? 2 : 1;

		EXPECT_EQ(-EINVAL, umm_report(self->fd, bad[i], n, 0))
			TH_LOG("case %zu", i);
		EXPECT_EQ(-EINVAL, umm_report(self->fd, bad[i], n,
					      UMM_REPORT_F_UPDATE))
			TH_LOG("case %zu (update)", i);
	}
	r = (struct umm_report){ .size = sizeof(r) - 1, .count = 1,
				 .tiers = (uintptr_t)&good };
	EXPECT_EQ(-EINVAL, report_raw(self->fd, &r));
	r.size = sizeof(r);
	r.flags = 2;
	EXPECT_EQ(-EINVAL, report_raw(self->fd, &r));
	r.flags = 0;
	r.reserved = 1;
	EXPECT_EQ(-EINVAL, report_raw(self->fd, &r));
	r.reserved = 0;
	r.count = UMM_REPORT_MAX + 1;
	EXPECT_EQ(-E2BIG, report_raw(self->fd, &r));
	r.count = 0xffffffffu;
	EXPECT_EQ(-E2BIG, report_raw(self->fd, &r));
	r.count = 1;
	r.tiers = 8;
	EXPECT_EQ(-EFAULT, report_raw(self->fd, &r));
	EXPECT_EQ(-1, ioctl(self->fd, UMM_IOC_REPORT, (void *)8));
	EXPECT_EQ(EFAULT, errno);
	/* the books are still what the good report said */
	EXPECT_EQ(self->res0 + 32 * MiB, node_sum("resident_bytes", 0));
	EXPECT_EQ(self->res1, node_sum("resident_bytes", 1));
}

TEST_F(cl, report_max_entries)
{
	struct umm_tier_report t[UMM_MAX_GPUS + 2];
	unsigned int n = 0;

	t[n++] = (struct umm_tier_report){ UMM_TIER_HOST_NODE, 0, MiB, 0 };
	t[n++] = (struct umm_tier_report){ UMM_TIER_HOST_NODE, 1, MiB, 0 };
	for (uint32_t g = 0; g < UMM_MAX_GPUS; g++)
		t[n++] = (struct umm_tier_report){ UMM_TIER_GPU, g, MiB, MiB };
	EXPECT_EQ(0, umm_report(self->fd, t, n, 0));
	EXPECT_EQ(self->used3 + MiB, gpu_sum("used_bytes", 3));
}

TEST_F(cl, ack_rules)
{
	struct umm_ack a = { .size = sizeof(a), .seq = 1 };
	uint64_t acks0, acks1, freed0, freed1, lmax, lat;
	struct umm_tier_report t = { UMM_TIER_HOST_NODE, 0, 64 * MiB,
				     64 * MiB };
	struct umm_event ev;
	uint64_t t_ack;

	/* nothing issued yet */
	EXPECT_EQ(-EINVAL, umm_ack(self->fd, 1, 0, NULL));
	EXPECT_EQ(-EINVAL, umm_ack(self->fd, 0, 0, NULL));
	ASSERT_EQ(0, umm_report(self->fd, &t, 1, 0));
	ASSERT_EQ(0, attr_read_u64("acks", &acks0));
	ASSERT_EQ(0, attr_read_u64("bytes_freed", &freed0));
	ASSERT_EQ(0, umm_inject("node 0 critical"));
	ASSERT_EQ(1, umm_wait_type(self->fd, UMM_EVENT_PRESSURE, &ev, 10000));
	umm_inject("node 0 clear");
	ASSERT_TRUE(ev.flags & UMM_EVENT_F_ACK);
	/* bad forms first: they must not consume the pending event */
	a.size = sizeof(a) + 1;
	a.seq = ev.seq;
	EXPECT_EQ(-1, ioctl(self->fd, UMM_IOC_ACK, &a));
	EXPECT_EQ(EINVAL, errno);
	a.size = sizeof(a);
	a.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, UMM_IOC_ACK, &a));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-EINVAL, umm_ack(self->fd, ev.seq + 1000, 0, NULL));
	EXPECT_EQ(-EINVAL, umm_ack(self->fd, 0, 0, NULL));

	ASSERT_EQ(0, umm_ack(self->fd, ev.seq, 3 * MiB, &lat));
	t_ack = now_ns();
	EXPECT_LT(0, lat);
	EXPECT_GE(t_ack - ev.ts_ns, lat) TH_LOG("from the event to the ACK");
	EXPECT_EQ(-ENOENT, umm_ack(self->fd, ev.seq, 0, NULL))
		TH_LOG("acknowledged already");
	ASSERT_EQ(0, attr_read_u64("acks", &acks1));
	ASSERT_EQ(0, attr_read_u64("bytes_freed", &freed1));
	ASSERT_EQ(0, attr_read_u64("ack_latency_ns_max", &lmax));
	EXPECT_EQ(acks0 + 1, acks1);
	EXPECT_EQ(freed0 + 3 * MiB, freed1);
	EXPECT_LE(lat, lmax);
}

/*
 * An ACK 30 ms after its event: one count, in the bucket of a latency
 * between what the ACK answered and what this process saw (the module
 * takes its own reading in between), and the sum likewise.
 */
TEST_F(cl, ack_lands_in_its_bucket)
{
	struct umm_tier_report t = { UMM_TIER_HOST_NODE, 0, 64 * MiB,
				     64 * MiB };
	uint64_t le[ACK_BUCKETS], sum, lat, seen;
	struct umm_event ev;
	int i;

	ASSERT_EQ(0, my_ack_buckets(&sum, le));
	EXPECT_EQ(0, ack_count(le)) TH_LOG("a new client has no latencies");
	EXPECT_EQ(0, sum);
	ASSERT_EQ(0, umm_report(self->fd, &t, 1, 0));
	ASSERT_EQ(0, umm_inject("node 0 critical"));
	ASSERT_EQ(1, umm_wait_type(self->fd, UMM_EVENT_PRESSURE, &ev, 10000));
	umm_inject("node 0 clear");
	usleep(30000);
	ASSERT_EQ(0, umm_ack(self->fd, ev.seq, 0, &lat));
	seen = now_ns() - ev.ts_ns;
	ASSERT_EQ(0, my_ack_buckets(&sum, le));
	EXPECT_EQ(1, ack_count(le));
	for (i = 0; i < ACK_BUCKETS && !le[i]; i++)
		;
	EXPECT_LE(ack_bucket(lat), i) TH_LOG("latency %llu ns",
					     (unsigned long long)lat);
	EXPECT_GE(ack_bucket(seen), i) TH_LOG("seen %llu ns",
					      (unsigned long long)seen);
	EXPECT_LE(5, i) TH_LOG("30 ms is past the 20 ms bucket");
	EXPECT_LE(lat, sum);
	EXPECT_GE(seen, sum);
}

TEST_F(cl, ack_covers_earlier_events)
{
	struct umm_tier_report t = { UMM_TIER_HOST_NODE, 1, 64 * MiB,
				     64 * MiB };
	uint64_t le[ACK_BUCKETS], sum;
	struct umm_event e1, e2;

	ASSERT_EQ(0, umm_report(self->fd, &t, 1, 0));
	/*
	 * From NORMAL: a node that real samples had left above LOW would
	 * answer "low" with a RELIEF, and this test would wait for a second
	 * PRESSURE that never comes.
	 */
	ASSERT_EQ(0, umm_inject("node 1 normal"));
	umm_drain_tier(self->fd, UMM_TIER_HOST_NODE, 1);
	ASSERT_EQ(0, umm_inject("node 1 low"));
	ASSERT_EQ(0, umm_inject("node 1 critical"));
	umm_inject("node 1 clear");
	ASSERT_EQ(1, umm_wait_tier(self->fd, UMM_EVENT_PRESSURE,
				   UMM_TIER_HOST_NODE, 1, &e1, 10000));
	ASSERT_EQ(1, umm_wait_tier(self->fd, UMM_EVENT_PRESSURE,
				   UMM_TIER_HOST_NODE, 1, &e2, 10000));
	EXPECT_EQ(UMM_LEVEL_LOW, e1.level);
	EXPECT_EQ(UMM_LEVEL_CRITICAL, e2.level);
	EXPECT_EQ(0, umm_ack(self->fd, e2.seq, MiB, NULL));
	EXPECT_EQ(-ENOENT, umm_ack(self->fd, e1.seq, 0, NULL))
		TH_LOG("the ACK of e2 covered e1");
	ASSERT_EQ(0, my_ack_buckets(&sum, le));
	EXPECT_EQ(2, ack_count(le)) TH_LOG("one latency per event retired");
}

TEST_F(cl, query_describes_sources)
{
	struct umm_level_info lv[2 + UMM_MAX_GPUS];
	struct umm_tier_report t = { UMM_TIER_GPU, 5, 10 * MiB, 0 };
	struct umm_query q;
	uint64_t total;
	int n, gpus = 0;

	n = umm_query(self->fd, NULL, 0, &q);
	ASSERT_LE(2, n);
	EXPECT_EQ(1, q.enabled);
	ASSERT_EQ(0, umm_report(self->fd, &t, 1, 0));
	ASSERT_EQ(0, umm_inject("node 1 medium"));
	n = umm_query(self->fd, lv, 2 + UMM_MAX_GPUS, &q);
	umm_inject("node 1 clear");
	ASSERT_LE(3, n);
	EXPECT_EQ(UMM_TIER_HOST_NODE, lv[0].tier_type);
	EXPECT_EQ(0, lv[0].tier_id);
	EXPECT_EQ(UMM_TIER_HOST_NODE, lv[1].tier_type);
	EXPECT_EQ(1, lv[1].tier_id);
	EXPECT_EQ(UMM_LEVEL_MEDIUM, lv[1].level);
	EXPECT_TRUE(lv[1].flags & UMM_LEVEL_F_INJECTED);
	EXPECT_FALSE(lv[0].flags & UMM_LEVEL_F_INJECTED);
	ASSERT_EQ(0, attr_read_u64("nodes/node0/total_bytes", &total));
	EXPECT_EQ(total, lv[0].total_bytes);
	EXPECT_GE(lv[0].total_bytes, lv[0].free_bytes);
	for (int i = 2; i < n && i < 2 + UMM_MAX_GPUS; i++) {
		EXPECT_EQ(UMM_TIER_GPU, lv[i].tier_type);
		if (lv[i].tier_id == 5) {
			gpus++;
			EXPECT_LE(10 * MiB, lv[i].used_bytes);
		}
	}
	EXPECT_EQ(1, gpus) TH_LOG("GPU 5 has reported bytes");
	/* room for one only: one written, the count says how many exist */
	memset(lv, 0xa5, sizeof(lv));
	EXPECT_EQ(n, umm_query(self->fd, lv, 1, &q));
	EXPECT_EQ(0, lv[0].tier_id);
	EXPECT_EQ(0xa5a5a5a5u, lv[1].tier_type) TH_LOG("wrote past room");
	/* bad forms */
	q = (struct umm_query){ .size = sizeof(q) + 4 };
	EXPECT_EQ(-1, ioctl(self->fd, UMM_IOC_QUERY, &q));
	EXPECT_EQ(EINVAL, errno);
	q = (struct umm_query){ .size = sizeof(q), .flags = 1 };
	EXPECT_EQ(-1, ioctl(self->fd, UMM_IOC_QUERY, &q));
	EXPECT_EQ(EINVAL, errno);
	q = (struct umm_query){ .size = sizeof(q), .count = 4, .levels = 8 };
	EXPECT_EQ(-1, ioctl(self->fd, UMM_IOC_QUERY, &q));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(cl, query_last_seq)
{
	struct umm_query q;
	struct umm_event ev;

	ASSERT_EQ(0, attr_write("enabled", "0"));
	ASSERT_EQ(0, attr_write("enabled", "1"));
	ASSERT_EQ(1, umm_next_event(self->fd, &ev, 10000));
	ASSERT_EQ(1, umm_next_event(self->fd, &ev, 10000));
	ASSERT_LE(0, umm_query(self->fd, NULL, 0, &q));
	EXPECT_EQ(ev.seq, q.last_seq);
}

TEST_HARNESS_MAIN
