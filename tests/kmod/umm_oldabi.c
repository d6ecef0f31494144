// SPDX-License-Identifier: GPL-2.0
/*
 * Description: a client built against API version 1's header as it was
 * first released (abi-v1/linux/umm.h, kept as it was; no helper of ours,
 * which follows the current header) keeps working with this module: its
 * handshake, REPORT and QUERY (struct sizes of then), and a cgroup's
 * PRESSURE event read with that header's struct umm_event: tier_id the low
 * 32 bits of the cgroup's id and dest_node UMM_NODE_NONE, as it was told
 * (the storage now shared with tier_id_hi stays so for it).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/umm.h>	/* abi-v1/linux/umm.h: see the Makefile */

#include "harness.h"

#define MiB (1ull << 20)
#define CG "/sys/fs/cgroup"

TEST_TIMEOUT_SET(v1_client_keeps_working, 120);

static int put(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : -EIO;
}

/* A child in @cg touching @bytes, then waiting to be killed. */
static pid_t fill(const char *procs, uint64_t bytes)
{
	int ready[2];
	pid_t pid;
	char c;

	if (pipe(ready))
		return -1;
	pid = fork();
	if (pid == 0) {
		char *p;

		if (put(procs, "0"))
			_exit(20);
		p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			_exit(21);
		madvise(p, bytes, MADV_NOHUGEPAGE);
		memset(p, 1, bytes);
		if (write(ready[1], "r", 1) != 1)
			_exit(22);
		pause();
		_exit(0);
	}
	close(ready[1]);
	if (pid > 0 && read(ready[0], &c, 1) != 1)
		pid = -1;
	close(ready[0]);
	return pid;
}

TEST(v1_client_keeps_working)
{
	struct umm_api a = {
		.size = sizeof(a), .api = UMM_API_VERSION,
		.features = UMM_FEATURE_CGROUP | UMM_FEATURE_ALL_PRESSURE,
	};
	struct umm_tier_report t = {
		.tier_type = UMM_TIER_HOST_NODE, .tier_id = 0,
		.resident_bytes = MiB, .reclaimable_bytes = MiB,
	};
	struct umm_report r = { .size = sizeof(r), .count = 1 };
	struct umm_level_info lv[64];
	struct umm_query q = { .size = sizeof(q), .count = 64 };
	struct umm_event ev;
	struct pollfd pfd;
	struct stat st;
	int fd, seen = 0;
	pid_t filler;

	ASSERT_EQ(64, (int)sizeof(ev));
	if (access(CG "/cgroup.controllers", F_OK))
		ASSERT_EQ(0, mount("none", CG, "cgroup2", 0, NULL));
	ASSERT_EQ(0, put(CG "/cgroup.subtree_control", "+memory"));
	if (mkdir(CG "/v1", 0755))
		ASSERT_EQ(EEXIST, errno);
	ASSERT_EQ(0, stat(CG "/v1", &st));
	ASSERT_EQ(0, put(CG "/v1/memory.max", "134217728"));
	ASSERT_EQ(0, put(CG "/v1/cgroup.procs", "0"));

	fd = open(UMM_DEVICE_PATH, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	ASSERT_LE(0, fd);
	strcpy(a.name, "v1-client");
	ASSERT_EQ(0, ioctl(fd, UMM_IOC_API, &a)) TH_LOG("%s", strerror(errno));
	EXPECT_TRUE(a.features & UMM_FEATURE_CGROUP);
	EXPECT_EQ(64u, a.event_size);
	r.tiers = (uintptr_t)&t;
	ASSERT_EQ(0, ioctl(fd, UMM_IOC_REPORT, &r));
	q.levels = (uintptr_t)lv;
	ASSERT_EQ(0, ioctl(fd, UMM_IOC_QUERY, &q));
	EXPECT_LE(2u, q.count);

	/* to 112 of 128 MiB: LOW */
	filler = fill(CG "/v1/cgroup.procs", 112 * MiB);
	ASSERT_LT(0, filler);
	pfd.fd = fd;
	pfd.events = POLLIN;
	while (!seen && poll(&pfd, 1, 5000) == 1 &&
	       read(fd, &ev, sizeof(ev)) == sizeof(ev)) {
		if (ev.type != UMM_EVENT_PRESSURE ||
		    ev.tier_type != UMM_TIER_CGROUP)
			continue;
		seen = 1;
		EXPECT_EQ((uint32_t)st.st_ino, ev.tier_id);
		EXPECT_EQ(UMM_NODE_NONE, ev.dest_node)
			TH_LOG("a v1 client reads dest_node %d", ev.dest_node);
	}
	kill(filler, SIGKILL);
	waitpid(filler, NULL, 0);
	EXPECT_EQ(1, seen) TH_LOG("no PRESSURE about the cgroup");
	close(fd);
	put(CG "/cgroup.procs", "0");
	rmdir(CG "/v1");
}

TEST_HARNESS_MAIN
