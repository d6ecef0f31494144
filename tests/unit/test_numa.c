/* SPDX-License-Identifier: MIT */
/*
 * Description: host NUMA helpers (libum/src/numa.c): discovery agrees with
 * the kernel's sysfs, PCI device nodes from a fake sysfs tree, allocation on
 * a node lands there, bad arguments are refused. Moving pages between nodes
 * needs two nodes with memory: those tests skip on a one-node machine and
 * run in the VM (tests/e2e runs this program there with two nodes).
 * The home node of a context (where host copies go by default) follows the
 * node the backend reports for its device, LIBUM_HOME_NODE first, with sane
 * fallbacks for an unknown or bogus node.
 */
#include <errno.h>
#include <numaif.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"
#include "internal.h"
#include "um_numa.h"

#define MiB (1024ull * 1024)

/* Nodes with memory according to sysfs, independently of libnuma. */
static int sysfs_nodes_with_memory(void)
{
	char path[128], line[256];
	int n = 0;

	for (int i = 0; i < 1024; i++) {
		unsigned long long kb = 0;
		FILE *f;

		snprintf(path, sizeof(path),
			 "/sys/devices/system/node/node%d/meminfo", i);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "Node %*d MemTotal: %llu kB", &kb) == 1)
				break;
		fclose(f);
		n += kb > 0;
	}
	return n;
}

TEST(discovery_matches_sysfs)
{
	int nodes = sysfs_nodes_with_memory();
	uint64_t free_b, total_b;

	ASSERT_LE(1, um__numa_node_count());
	ASSERT_LE(0, um__numa_max_node());
	if (um__numa_available() && nodes)
		ASSERT_EQ(nodes, um__numa_node_count());
	ASSERT_EQ(1, um__numa_node_valid(0));
	ASSERT_EQ(0, um__numa_node_valid(-1));
	ASSERT_EQ(0, um__numa_node_valid(um__numa_max_node() + 1));
	ASSERT_EQ(0, um__numa_node_mem(0, &free_b, &total_b));
	ASSERT_LT(0, total_b);
	ASSERT_LE(free_b, total_b);
	ASSERT_EQ(-EINVAL, um__numa_node_mem(-1, &free_b, &total_b));
	ASSERT_EQ(-EINVAL, um__numa_node_mem(4000, &free_b, &total_b));
	ASSERT_EQ(0, um__numa_node_mem(0, NULL, NULL));
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);

	if (fd < 0)
		return;
	if (write(fd, text, strlen(text)) < 0)
		perror("write");
	close(fd);
}

FIXTURE(fakesys) {
	char root[256];
};

FIXTURE_SETUP(fakesys)
{
	static const char *const devs[][2] = {
		{ "0000:17:00.0", "1\n" },
		{ "0000:65:00.0", "-1\n" },
		{ "0001:02:1f.7", "0\n" },
		{ "0000:99:00.0", "garbage\n" },
	};
	char path[512];
	const char *tmp = getenv("TMPDIR");

	snprintf(self->root, sizeof(self->root), "%s/um-test-numa.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	ASSERT_NONNULL(mkdtemp(self->root));
	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++) {
		snprintf(path, sizeof(path), "mkdir -p %s/sys/bus/pci/devices/%s",
			 self->root, devs[i][0]);
		ASSERT_EQ(0, system(path));
		snprintf(path, sizeof(path), "%s/sys/bus/pci/devices/%s/numa_node",
			 self->root, devs[i][0]);
		write_file(path, devs[i][1]);
	}
}

FIXTURE_TEARDOWN(fakesys)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", self->root);
	if (system(cmd))
		TH_LOG("cleanup of %s failed", self->root);
}

TEST_F(fakesys, pci_node)
{
	ASSERT_EQ(1, um__numa_pci_node_at(self->root, "0000:17:00.0"));
	ASSERT_EQ(1, um__numa_pci_node_at(self->root, "17:00.0"));
	/* the platform does not say: node 0 */
	ASSERT_EQ(0, um__numa_pci_node_at(self->root, "65:00.0"));
	ASSERT_EQ(0, um__numa_pci_node_at(self->root, "1:2:1f.7"));
	ASSERT_EQ(-EIO, um__numa_pci_node_at(self->root, "99:00.0"));
	ASSERT_EQ(-ENOENT, um__numa_pci_node_at(self->root, "18:00.0"));
	ASSERT_EQ(0, um__numa_pci_node_at(self->root, NULL));
	ASSERT_EQ(-EINVAL, um__numa_pci_node_at(self->root, ""));
	ASSERT_EQ(-EINVAL, um__numa_pci_node_at(self->root, "17:00"));
	ASSERT_EQ(-EINVAL, um__numa_pci_node_at(self->root, "17:00.8"));
	ASSERT_EQ(-EINVAL, um__numa_pci_node_at(self->root, "17:20.0"));
	ASSERT_EQ(-EINVAL, um__numa_pci_node_at(self->root, "../../x"));
	ASSERT_EQ(-EINVAL, um__numa_pci_node_at(self->root, "17:00.0 "));
	ASSERT_EQ(-EINVAL, um__numa_pci_node_at(self->root, "100:00.0"));
}

TEST(pci_node_real_sysfs)
{
	/* No such device on any machine: bus ff, device 1f, function 7. */
	ASSERT_EQ(-ENOENT, um__numa_pci_node("ffff:ff:1f.7"));
}

TEST(alloc_on_node0_lands_there)
{
	uint64_t counts[4] = { 0 };
	size_t len = 8 * MiB + 123;
	void *p;

	ASSERT_EQ(0, um__numa_alloc(len, 0, &p));
	ASSERT_EQ(0, (uintptr_t)p % 4096);
	memset(p, 0x5a, len);
	ASSERT_EQ(0, um__numa_where(p, len, counts, 4));
	ASSERT_EQ((len + 4095) / 4096 * 4096, counts[0]);
	um__numa_free(p, len);

	ASSERT_EQ(0, um__numa_alloc(4096, UM_NUMA_ANY, &p));
	ASSERT_LE(0, um__numa_where(p, 4096, NULL, 0));
	um__numa_free(p, 4096);
}

/*
 * libum's own threads turn an application's binding into a preference
 * (their allocations fall back when the node is full); any other policy
 * stays as it is.
 */
TEST(thread_prefer_turns_bind_into_preferred)
{
	unsigned long mask[16] = { 1 }, got[16];
	int mode = -1;

	if (!um__numa_available())
		SKIP(return, "no NUMA");
	ASSERT_EQ(0, set_mempolicy(MPOL_DEFAULT, NULL, 0));
	ASSERT_EQ(0, um__numa_thread_prefer());
	ASSERT_EQ(0, get_mempolicy(&mode, NULL, 0, NULL, 0));
	EXPECT_EQ(MPOL_DEFAULT, mode) TH_LOG("no binding: left alone");

	ASSERT_EQ(0, set_mempolicy(MPOL_BIND, mask, 1024 + 1));
	ASSERT_EQ(0, um__numa_thread_prefer());
	memset(got, 0, sizeof(got));
	ASSERT_EQ(0, get_mempolicy(&mode, got, 1024 + 1, NULL, 0));
	EXPECT_EQ(MPOL_PREFERRED, mode);
	EXPECT_EQ(1ul, got[0]) TH_LOG("the bound node, preferred");
	ASSERT_EQ(0, set_mempolicy(MPOL_DEFAULT, NULL, 0));
}

TEST(bad_arguments)
{
	uint64_t moved, counts[2];
	void *p = NULL;
	char *q;

	ASSERT_EQ(-EINVAL, um__numa_alloc(0, 0, &p));
	ASSERT_EQ(-EINVAL, um__numa_alloc(4096, 0, NULL));
	ASSERT_EQ(-EINVAL, um__numa_alloc(4096, -7, &p));
	ASSERT_EQ(-EINVAL, um__numa_alloc(4096, um__numa_max_node() + 1, &p));
	ASSERT_EQ(-EINVAL, um__numa_alloc(SIZE_MAX, 0, &p));
	ASSERT_NULL(p);

	ASSERT_EQ(0, um__numa_alloc(2 * 4096, 0, (void **)&q));
	ASSERT_EQ(-EINVAL, um__numa_move(q + 1, 4096, 0, &moved));
	ASSERT_EQ(-EINVAL, um__numa_move(q, 0, 0, &moved));
	ASSERT_EQ(-EINVAL, um__numa_move(NULL, 4096, 0, &moved));
	ASSERT_EQ(-EINVAL, um__numa_move(q, 4096, -1, &moved));
	ASSERT_EQ(-EINVAL, um__numa_bind(q, 4096, um__numa_max_node() + 1));
	ASSERT_EQ(-EINVAL, um__numa_bind(q + 8, 4096, 0));
	ASSERT_EQ(-EINVAL, um__numa_where(q + 8, 4096, counts, 2));
	ASSERT_EQ(-EINVAL, um__numa_where(q, 4096, NULL, 2));
	ASSERT_EQ(-EINVAL, um__numa_where(q, 4096, counts, -1));
	um__numa_free(q, 2 * 4096);
	um__numa_free(NULL, 4096);
}

TEST(where_untouched_is_enoent)
{
	size_t len = 16 * 4096;
	uint64_t counts[2];
	void *p;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	if (!um__numa_available()) {
		munmap(p, len);
		SKIP(return, "no NUMA: where() cannot tell untouched pages");
	}
	ASSERT_EQ(-ENOENT, um__numa_where(p, len, counts, 2));
	ASSERT_EQ(0, counts[0]);
	memset(p, 1, 4096);
	ASSERT_LE(0, um__numa_where(p, len, counts, 2));
	ASSERT_EQ(4096, counts[0] + counts[1]);
	munmap(p, len);
}

TEST(pick)
{
	uint64_t free_b, total_b;
	int n;

	ASSERT_EQ(0, um__numa_node_mem(0, &free_b, &total_b));
	ASSERT_LE(0, um__numa_pick(UM_NUMA_ANY, 0));
	ASSERT_EQ(-ENOSPC, um__numa_pick(UM_NUMA_ANY, UINT64_MAX));
	n = um__numa_pick(0, 0);
	if (um__numa_node_count() == 1)
		ASSERT_EQ(-ENOSPC, n);
	else
		ASSERT_NE(0, n);
}

/* ---- two nodes (the VM) ------------------------------------------------ */

static int second_node(void)
{
	for (int n = 1; n <= um__numa_max_node(); n++)
		if (um__numa_node_valid(n))
			return n;
	return -1;
}

TEST(move_between_nodes_keeps_bytes)
{
	int to = second_node();
	size_t len = 32 * MiB;
	uint64_t moved = 0, counts[64];
	unsigned char *p;
	uint64_t sum1 = 0, sum2 = 0;

	if (to < 0)
		SKIP(return, "one NUMA node with memory here");
	ASSERT_EQ(0, um__numa_alloc(len, 0, (void **)&p));
	for (size_t i = 0; i < len; i++) {
		p[i] = (unsigned char)(i * 31 + (i >> 12));
		sum1 = sum1 * 131 + p[i];
	}
	ASSERT_EQ(0, um__numa_where(p, len, counts, 64));
	ASSERT_EQ(len, counts[0]);
	ASSERT_EQ(0, um__numa_move(p, len, to, &moved));
	ASSERT_EQ(len, moved);
	ASSERT_EQ(to, um__numa_where(p, len, counts, 64));
	ASSERT_EQ(len, counts[to]);
	ASSERT_EQ(0, counts[0]);
	for (size_t i = 0; i < len; i++)
		sum2 = sum2 * 131 + p[i];
	ASSERT_EQ(sum1, sum2);
	/* and back */
	ASSERT_EQ(0, um__numa_move(p, len, 0, &moved));
	ASSERT_EQ(0, um__numa_where(p, len, counts, 64));
	ASSERT_EQ(len, counts[0]);
	um__numa_free(p, len);
}

/* After a move the range stays bound: new pages fault in on the new node. */
TEST(move_rebinds_range)
{
	int to = second_node();
	size_t len = 4 * MiB;
	uint64_t moved, counts[64];
	char *p;

	if (to < 0)
		SKIP(return, "one NUMA node with memory here");
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	/* 4 KiB pages: a huge page would make "half touched" more than half */
	madvise(p, len, MADV_NOHUGEPAGE);
	memset(p, 1, len / 2);		/* half touched, wherever */
	ASSERT_EQ(0, um__numa_move(p, len, to, &moved));
	ASSERT_EQ(len / 2, moved);
	memset(p + len / 2, 2, len / 2);
	ASSERT_EQ(to, um__numa_where(p, len, counts, 64));
	ASSERT_EQ(len, counts[to]);
	munmap(p, len);
}

TEST(alloc_on_second_node)
{
	int to = second_node();
	uint64_t counts[64], free_b, t;
	size_t len = 16 * MiB;
	void *p;

	if (to < 0)
		SKIP(return, "one NUMA node with memory here");
	ASSERT_EQ(0, um__numa_node_mem(to, &free_b, &t));
	ASSERT_LE(free_b, t);
	ASSERT_EQ(0, um__numa_alloc(len, to, &p));
	/* every page there (the kernel's free counters lag: not asserted) */
	ASSERT_EQ(to, um__numa_where(p, len, counts, 64));
	ASSERT_EQ(len, counts[to]);
	um__numa_free(p, len);
}

/* ---- a context's home node ------------------------------------------- */

static struct um_backend_ops fake_ops;
static int fake_node, fake_calls, fake_dev = -1;

static int fake_device_numa_node(struct um_backend *be, int dev)
{
	fake_calls++;
	fake_dev = dev;
	return fake_node;
}

/* home node a context gets when device 0 reports node (env as set) */
static int home_for(int node)
{
	struct um_context *ctx = ctx_sim(0, 64 * MiB);
	const struct um_backend_ops *real;
	int home;

	if (!ctx)
		return -1000;
	real = ctx->be.ops;
	fake_ops = *real;
	fake_ops.device_numa_node = fake_device_numa_node;
	fake_node = node;
	fake_calls = 0;
	ctx->be.ops = &fake_ops;
	ctx->home_node = -1000;
	um__context_place_home(ctx);
	home = ctx->home_node;
	ctx->be.ops = real;
	if (um_context_destroy(ctx))
		return -1001;
	return home;
}

/* several nodes: the reported one; one node: no placement (UM_NUMA_ANY) */
TEST(home_follows_device_node)
{
	int last = um__numa_max_node();
	int multi = um__numa_node_count() > 1;

	unsetenv("LIBUM_HOME_NODE");
	while (last > 0 && !um__numa_node_valid(last))
		last--;
	ASSERT_EQ(multi ? last : UM_NUMA_ANY, home_for(last));
	ASSERT_EQ(1, fake_calls);
	ASSERT_EQ(0, fake_dev);
	if (!multi)
		TH_LOG("one node: the reported node is not used (no placement)");
}

TEST(home_falls_back_on_unknown_node)
{
	int fallback = um__numa_node_count() > 1 ? 0 : UM_NUMA_ANY;

	unsetenv("LIBUM_HOME_NODE");
	ASSERT_EQ(fallback, home_for(-1));
	ASSERT_EQ(fallback, home_for(-ENODEV));
	ASSERT_EQ(fallback, home_for(um__numa_max_node() + 1));
	ASSERT_EQ(fallback, home_for(100000));
}

TEST(home_env_beats_device)
{
	int last = um__numa_max_node();

	setenv("LIBUM_HOME_NODE", "0", 1);
	ASSERT_EQ(0, home_for(last));
	ASSERT_EQ(0, home_for(-1));
	setenv("LIBUM_HOME_NODE", "any", 1);
	ASSERT_EQ(UM_NUMA_ANY, home_for(0));
	/* a bad value is refused when the context is made (test_env.c) */
	setenv("LIBUM_HOME_NODE", "12x", 1);
	ASSERT_EQ(-1000, home_for(0));
	unsetenv("LIBUM_HOME_NODE");
}

/* the sim reports no node: a created context gets the plain default */
TEST(home_of_sim_context)
{
	struct um_context *ctx;
	int want;

	unsetenv("LIBUM_HOME_NODE");
	ctx = ctx_sim(0, 64 * MiB);
	ASSERT_NONNULL(ctx);
	want = um__numa_default_home(-1);
	ASSERT_EQ(want, ctx->home_node);
	ASSERT_EQ(0, um_context_destroy(ctx));
	setenv("LIBUM_HOME_NODE", "0", 1);
	ctx = ctx_sim(0, 64 * MiB);
	ASSERT_NONNULL(ctx);
	ASSERT_EQ(0, ctx->home_node);
	ASSERT_EQ(0, um_context_destroy(ctx));
	unsetenv("LIBUM_HOME_NODE");
}

/*
 * A host node that does not exist is -EINVAL with an ERR
 * line naming the node and what the machine has, for acquire, evict and
 * shed alike, and the pool is not asked (its WARN of a missing host copy
 * would say nothing of the cause).
 */
TEST(missing_host_node_named)
{
	struct um_context *ctx = ctx_sim(0, 64 * MiB);
	int missing = um__numa_max_node() + 1;
	um_tier_t node = UM_TIER_HOST_NODE((unsigned int)missing);
	char name[32], count[64];
	um_region_t r;

	ASSERT_NONNULL(ctx);
	snprintf(name, sizeof(name), "host node %d ", missing);
	snprintf(count, sizeof(count), "this machine has %d node(s) with memory",
		 um__numa_node_count());
	r = region(ctx, UM_KIND_GENERIC, 0, MiB, "r");
	ASSERT_NE(0, r);
	logcap_reset();
	EXPECT_EQ(-EINVAL, um_acquire(ctx, r, node, NULL));
	EXPECT_TRUE(logcap_has(UM_LOG_ERR, "acquire: ", name, count, NULL));
	ASSERT_EQ(0, um_acquire(ctx, r, UM_TIER_GPU(0), NULL));
	ASSERT_EQ(0, um_release(ctx, r));
	EXPECT_EQ(-EINVAL, um_evict(ctx, r, node));
	EXPECT_TRUE(logcap_has(UM_LOG_ERR, "evict: ", name, count, NULL));
	EXPECT_EQ(-EINVAL, um_shed(ctx, UM_TIER_GPU(0), MiB, node));
	EXPECT_TRUE(logcap_has(UM_LOG_ERR, "shed: ", name, count, NULL));
	EXPECT_EQ(-EINVAL, um_shed(ctx, node, MiB, UM_TIER_DISK));
	EXPECT_FALSE(logcap_has(UM_LOG_WARN, "pool", NULL));
	EXPECT_TRUE(on_gpu(ctx, r));
	/* the nodes that exist still work */
	ASSERT_EQ(0, um_evict(ctx, r, UM_TIER_HOST_NODE(0)));
	ASSERT_EQ(0, um_wait(ctx, r));
	EXPECT_EQ(UM_TIER_HOST_NODE(0), residency(ctx, r));
	ASSERT_EQ(0, um_free(ctx, r));
	ASSERT_EQ(0, um_context_destroy(ctx));
}

TEST_HARNESS_MAIN
