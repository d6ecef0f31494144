// SPDX-License-Identifier: GPL-2.0
/*
 * Description: clients come and go without leaking. 1000 open / handshake /
 * REPORT / event / close cycles leave the module's client count where it
 * was and the kernel's slab and vmalloc usage within a small slack (a leak
 * of one client struct per cycle would show up as hundreds of KiB); clients
 * with the largest ring give all their memory back; ring_bytes counts what
 * a ring really takes (the allocator's rounding included, measured as free
 * memory gone per client beside clients with the smallest ring), and
 * ring_bytes_max admits as many rings as those bytes allow.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"

#define CYCLES		1000
#define SLACK_BYTES	(256 * 1024)	/* < 1000 leaked objects of 256 B */

TEST_TIMEOUT_SET(open_close_1000_no_leak, 300);

/* Sum of active_objs * objsize over /proc/slabinfo, in bytes. */
static long long slab_bytes(void)
{
	char line[512], name[64];
	long long total = 0;
	unsigned long act, num, size;
	FILE *f = fopen("/proc/slabinfo", "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#' || !strncmp(line, "slabinfo", 8))
			continue;
		if (sscanf(line, "%63s %lu %lu %lu", name, &act, &num,
			   &size) == 4)
			total += (long long)act * (long long)size;
	}
	fclose(f);
	return total;
}

static long long meminfo_bytes(const char *key)
{
	char line[256];
	unsigned long long kb;
	size_t n = strlen(key);
	FILE *f = fopen("/proc/meminfo", "re");
	long long v = -1;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':' &&
		    sscanf(line + n + 1, "%llu", &kb) == 1)
			v = (long long)kb * 1024;
	fclose(f);
	return v;
}

/*
 * Free memory including the pages parked on per-CPU free lists (the
 * "count:" lines of /proc/zoneinfo): MemFree leaves those out, and freeing
 * vmalloc'd rings fills them by tens of MiB.
 */
static long long free_bytes_all(void)
{
	unsigned long long v, pages = 0;
	char line[256];
	FILE *f = fopen("/proc/zoneinfo", "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, " nr_free_pages %llu", &v) == 1 ||
		    sscanf(line, " count: %llu", &v) == 1)
			pages += v;
	}
	fclose(f);
	return (long long)pages * sysconf(_SC_PAGESIZE);
}

/* Kernel memory now: slab + vmalloc, the smallest of a few looks (RCU
 * frees files and objects a little after close). */
static long long kernel_bytes(void)
{
	long long best = -1;

	for (int i = 0; i < 8; i++) {
		long long v = slab_bytes() + meminfo_bytes("VmallocUsed");

		if (best < 0 || v < best)
			best = v;
		usleep(100 * 1000);
	}
	return best;
}

static int cycle(int i)
{
	struct umm_tier_report t[2] = {
		{ UMM_TIER_HOST_NODE, 0, 1 << 20, 1 << 19 },
		{ UMM_TIER_GPU, (uint32_t)(i % UMM_MAX_GPUS), 1 << 20, 0 },
	};
	char name[UMM_NAME_LEN];
	int fd, ret;

	snprintf(name, sizeof(name), "leak-%d", i);
	fd = umm_client(name, i % 7, UMM_API_FEATURES, 0);
	if (fd < 0)
		return fd;
	ret = umm_report(fd, t, 2, 0);
	close(fd);
	return ret;
}

TEST(open_close_1000_no_leak)
{
	uint64_t clients0, clients1;
	long long before, after;
	int fd, i;

	for (i = 0; i < 50; i++)	/* warm the caches */
		ASSERT_EQ(0, cycle(i));
	/* one record per client, queued and never read, every 100 cycles */
	ASSERT_EQ(0, attr_read_u64("clients", &clients0));
	before = kernel_bytes();
	ASSERT_LT(0, before);
	for (i = 0; i < CYCLES; i++) {
		ASSERT_EQ(0, cycle(i)) TH_LOG("cycle %d", i);
		if (i % 100 == 0) {
			fd = umm_client("queued", 0, 0, 0);
			ASSERT_LE(0, fd);
			ASSERT_EQ(0, attr_write("enabled", "0"));
			ASSERT_EQ(0, attr_write("enabled", "1"));
			close(fd);
		}
	}
	after = kernel_bytes();
	ASSERT_EQ(0, attr_read_u64("clients", &clients1));
	EXPECT_EQ(clients0, clients1);
	TH_LOG("kernel memory %lld -> %lld bytes (%+lld) over %d cycles",
	       before, after, after - before, CYCLES);
	printf("# leak: slab+vmalloc delta %+lld bytes after %d cycles\n",
	       after - before, CYCLES);
	EXPECT_GT(SLACK_BYTES, after - before);
}

TEST(largest_rings_are_freed)
{
	long long before, after;
	uint64_t old, old_max;
	int fds[16];

	ASSERT_EQ(0, attr_read_u64("queue_len", &old));
	ASSERT_EQ(0, attr_read_u64("ring_bytes_max", &old_max));
	/* 16 rings of 4 MiB pass the default cap of 64 MiB */
	ASSERT_EQ(0, attr_write_u64("ring_bytes_max", 128ull << 20));
	ASSERT_EQ(0, attr_write_u64("queue_len", 65536));
	before = free_bytes_all();
	for (int r = 0; r < 4; r++) {
		for (int i = 0; i < 16; i++) {
			fds[i] = umm_client("bigring", 0, 0, 0);
			ASSERT_LE(0, fds[i]) TH_LOG("%s", strerror(-fds[i]));
		}
		for (int i = 0; i < 16; i++)
			close(fds[i]);
	}
	usleep(300 * 1000);
	after = free_bytes_all();
	attr_write_u64("queue_len", old);
	attr_write_u64("ring_bytes_max", old_max);
	/* 16 rings of 4 MiB: a leak of even one round is 64 MiB */
	EXPECT_GT(16LL << 20, before - after)
		TH_LOG("free (with per-CPU lists) %lld -> %lld", before, after);
	printf("# leak: free memory delta %+lld bytes after 64 rings of 4 MiB\n",
	       after - before);
}

/* ---- ring_bytes counts what rings take -------------------------------- */

#define RING_CLIENTS	128
#define RING_SLACK	4096	/* per ring: page tables, vmalloc's books */

/*
 * Free memory gone per client while RING_CLIENTS clients with rings of
 * @queue_len are open, and what ring_bytes grew by per client.
 */
static int ring_cost(uint64_t queue_len, long long *taken, uint64_t *counted)
{
	static int fds[RING_CLIENTS];
	uint64_t rb0, rb1;
	long long before, after;
	int n, ret = 0;

	ret = attr_write_u64("queue_len", queue_len);
	if (ret)
		return ret;
	usleep(100 * 1000);
	attr_read_u64("ring_bytes", &rb0);
	before = free_bytes_all();
	for (n = 0; n < RING_CLIENTS; n++) {
		fds[n] = umm_open(0);
		if (fds[n] < 0) {
			ret = fds[n];
			break;
		}
	}
	after = free_bytes_all();
	attr_read_u64("ring_bytes", &rb1);
	while (n--)
		close(fds[n]);
	*taken = (before - after) / RING_CLIENTS;
	*counted = (rb1 - rb0) / RING_CLIENTS;
	return ret;
}

TEST_TIMEOUT_SET(ring_bytes_count_what_rings_take, 120);

TEST(ring_bytes_count_what_rings_take)
{
	static const uint64_t lens[] = { 4, 63, 256, 4096 };
	uint64_t old_len, old_max, counted, small_counted, base, now, ring;
	long long taken, small_taken;
	int fd[4];

	ASSERT_EQ(0, attr_read_u64("queue_len", &old_len));
	ASSERT_EQ(0, attr_read_u64("ring_bytes_max", &old_max));
	ASSERT_EQ(0, attr_write_u64("ring_bytes_max", 256ull << 20));
	/*
	 * The clients with the smallest ring: what a client costs besides,
	 * the second time (the first grows the caches the others reuse).
	 */
	ASSERT_EQ(0, ring_cost(4, &small_taken, &small_counted));
	ASSERT_EQ(0, ring_cost(4, &small_taken, &small_counted));
	EXPECT_EQ(ring_alloc_bytes(4), small_counted);
	for (unsigned int i = 1; i < sizeof(lens) / sizeof(lens[0]); i++) {
		long long ring_taken;

		ASSERT_EQ(0, ring_cost(lens[i], &taken, &counted));
		ring_taken = taken - small_taken + (long long)small_counted;
		printf("# ring: queue_len %5llu: %llu bytes counted, %lld taken\n",
		       (unsigned long long)lens[i],
		       (unsigned long long)counted, ring_taken);
		EXPECT_EQ(ring_alloc_bytes(lens[i]), counted);
		EXPECT_GT(RING_SLACK, ring_taken - (long long)counted);
		EXPECT_GT(RING_SLACK, (long long)counted - ring_taken);
	}

	/* the cap admits exactly as many rings as their real bytes allow */
	ring = ring_alloc_bytes(256);
	ASSERT_EQ(0, attr_write_u64("queue_len", 256));
	ASSERT_EQ(0, attr_read_u64("ring_bytes", &base));
	ASSERT_EQ(0, attr_write_u64("ring_bytes_max", base + 3 * ring + ring - 1));
	for (int i = 0; i < 3; i++) {
		fd[i] = umm_open(0);
		EXPECT_LE(0, fd[i]) TH_LOG("open %d: %s", i, strerror(-fd[i]));
	}
	fd[3] = umm_open(0);
	EXPECT_EQ(-ENOBUFS, fd[3]);
	ASSERT_EQ(0, attr_read_u64("ring_bytes", &now));
	EXPECT_EQ(base + 3 * ring, now);
	for (int i = 0; i < 4; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	EXPECT_EQ(0, attr_write_u64("queue_len", old_len));
	EXPECT_EQ(0, attr_write_u64("ring_bytes_max", old_max));
}

TEST_HARNESS_MAIN
