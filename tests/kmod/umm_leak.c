// SPDX-License-Identifier: GPL-2.0
/*
 * Description: clients come and go without leaking. 1000 open / handshake /
 * REPORT / event / close cycles leave the module's client count where it
 * was and the kernel's slab and vmalloc usage within a small slack (a leak
 * of one client struct per cycle would show up as hundreds of KiB); clients
 * with the largest ring give all their memory back.
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

TEST_HARNESS_MAIN
