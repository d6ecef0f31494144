// SPDX-License-Identifier: GPL-2.0
/*
 * Description: what a careless or hostile client can do to umm.ko. A
 * handshake stalled in a page fault (userfaultfd) stalls no other client
 * and no knob write; reported byte counts are bounded and their sums cannot
 * wrap, so one client cannot hide another's usage; a client's name cannot
 * forge a row of the debugfs table; numbers are decimal or 0x hex, never
 * octal; bytes_freed is unsigned and saturates; an ACK whose answer cannot
 * be written does not count; ioctl structs larger than the module knows are
 * accepted when the extra bytes are zero (E2BIG otherwise), smaller ones
 * refused; a ring is charged to the opener's memory cgroup and the rings
 * of one user's clients are capped by ring_bytes_max, leaving room to the
 * other users. Runs
 * late in the boot: it saturates the module's bytes_freed.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"

#define GiB (1ull << 30)

/* ---- a handshake stalled in a page fault ------------------------------ */

struct stall {
	int umm_fd, uffd;
	void *page;
	size_t page_size;
	int api_ret;			/* the stalled handshake's result */
	volatile int others_done;	/* the other clients got through */
	volatile int watchdog_fired;	/* released before they did */
};

static int uffd_protect(struct stall *s, int on)
{
	struct uffdio_writeprotect wp = {
		.range = { (uintptr_t)s->page, s->page_size },
		.mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};

	return ioctl(s->uffd, UFFDIO_WRITEPROTECT, &wp) ? -errno : 0;
}

/* A page whose reads work and whose first write waits for us. */
static int uffd_setup(struct stall *s)
{
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURE_PAGEFAULT_FLAG_WP,
	};
	struct uffdio_register reg = {
		.range = { (uintptr_t)s->page, s->page_size },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};

	s->uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (s->uffd < 0)
		return -errno;
	if (ioctl(s->uffd, UFFDIO_API, &api) ||
	    ioctl(s->uffd, UFFDIO_REGISTER, &reg))
		return -errno;
	return uffd_protect(s, 1);
}

static void *stalled_handshake(void *arg)
{
	struct stall *s = arg;

	s->api_ret = ioctl(s->umm_fd, UMM_IOC_API, s->page) ? -errno : 0;
	return NULL;
}

/* Lets the stalled handshake go after 10 s if the others never finish. */
static void *watchdog(void *arg)
{
	struct stall *s = arg;

	for (int i = 0; i < 1000 && !s->others_done; i++)
		usleep(10000);
	if (!s->others_done) {
		s->watchdog_fired = 1;
		uffd_protect(s, 0);
	}
	return NULL;
}

/* Everything another client or an admin does, while the handshake waits. */
static int others_work(void)
{
	char buf[4096];
	uint64_t v;
	int fd, ret;

	fd = umm_client("bystander", 0, 0, 0);
	if (fd < 0)
		return fd;
	ret = umm_report_one(fd, UMM_TIER_HOST_NODE, 0, 4096, 0);
	if (!ret)
		ret = umm_query(fd, NULL, 0, NULL) < 0 ? -EIO : 0;
	close(fd);
	fd = umm_open(0);
	if (fd < 0)
		return fd;
	close(fd);
	if (!ret)
		ret = attr_read_u64("event_min_interval_ms", &v);
	if (!ret)
		ret = attr_write_u64("event_min_interval_ms", v);
	if (!ret)
		ret = attr_read(UMM_DEBUGFS "/clients", buf, sizeof(buf)) < 0;
	return ret;
}

TEST(stalled_handshake_stalls_nobody)
{
	struct stall s = { .page_size = (size_t)sysconf(_SC_PAGESIZE) };
	struct umm_api *a;
	struct uffd_msg msg;
	struct pollfd p;
	pthread_t t, w;

	s.page = mmap(NULL, s.page_size, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, s.page);
	a = s.page;
	*a = (struct umm_api){ .size = sizeof(*a), .api = UMM_API_VERSION,
			       .name = "stalled" };
	s.umm_fd = umm_open(0);
	ASSERT_LE(0, s.umm_fd);
	ASSERT_EQ(0, uffd_setup(&s)) TH_LOG("userfaultfd write-protect");
	ASSERT_EQ(0, pthread_create(&t, NULL, stalled_handshake, &s));

	/* the handshake is now inside the module, waiting for its answer */
	p = (struct pollfd){ .fd = s.uffd, .events = POLLIN };
	ASSERT_EQ(1, poll(&p, 1, 10000)) TH_LOG("no fault from the handshake");
	ASSERT_EQ((ssize_t)sizeof(msg), read(s.uffd, &msg, sizeof(msg)));
	EXPECT_EQ(UFFD_EVENT_PAGEFAULT, msg.event);

	ASSERT_EQ(0, pthread_create(&w, NULL, watchdog, &s));
	EXPECT_EQ(0, others_work());
	s.others_done = 1;
	pthread_join(w, NULL);
	EXPECT_EQ(0, s.watchdog_fired)
		TH_LOG("other clients waited for the stalled handshake");

	uffd_protect(&s, 0);
	pthread_join(t, NULL);
	EXPECT_EQ(0, s.api_ret);
	EXPECT_EQ(UMM_EVENT_SIZE, a->event_size);
	EXPECT_EQ(UMM_MAX_GPUS, a->max_gpus);
	EXPECT_LE(0, umm_query(s.umm_fd, NULL, 0, NULL));
	close(s.umm_fd);
	close(s.uffd);
	munmap(s.page, s.page_size);
}

/* ---- bounded reports, sums that cannot wrap --------------------------- */

static uint64_t gpu_attr(int id, const char *what)
{
	char p[64];
	uint64_t v = 0;

	snprintf(p, sizeof(p), "gpus/gpu%d/%s", id, what);
	attr_read_u64(p, &v);
	return v;
}

static int gpu_level_is(int id, const char *level)
{
	char p[64], buf[32];

	snprintf(p, sizeof(p), "gpus/gpu%d/level", id);
	if (attr_read(p, buf, sizeof(buf)) < 0)
		return 0;
	buf[strcspn(buf, "\n")] = '\0';
	return !strcmp(buf, level);
}

TEST(report_cannot_hide_others_usage)
{
	const int gpu = 9;
	int a, b;

	ASSERT_EQ(0, attr_write("gpus/gpu9/budget_bytes", "1073741824"));
	a = umm_client("honest", 0, 0, 0);
	b = umm_client("hostile", 0, 0, 0);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, umm_report_one(a, UMM_TIER_GPU, gpu, 2 * GiB, 0));
	EXPECT_EQ(2 * GiB, gpu_attr(gpu, "used_bytes"));
	EXPECT_TRUE(gpu_level_is(gpu, "critical"));

	/* 2^64 - 2 GiB would wrap the sum to 0: refused */
	EXPECT_EQ(-EINVAL, umm_report_one(b, UMM_TIER_GPU, gpu,
					  -(2 * GiB), 0));
	EXPECT_EQ(-EINVAL, umm_report_one(b, UMM_TIER_GPU, gpu,
					  UMM_TIER_BYTES_MAX + 1, 0));
	EXPECT_EQ(2 * GiB, gpu_attr(gpu, "used_bytes"));
	EXPECT_TRUE(gpu_level_is(gpu, "critical"));

	/* the largest value allowed adds up exactly */
	EXPECT_EQ(0, umm_report_one(b, UMM_TIER_GPU, gpu, UMM_TIER_BYTES_MAX,
				    UMM_TIER_BYTES_MAX));
	EXPECT_EQ(UMM_TIER_BYTES_MAX + 2 * GiB, gpu_attr(gpu, "used_bytes"));
	EXPECT_EQ(UMM_TIER_BYTES_MAX, gpu_attr(gpu, "reclaimable_bytes"));

	/* two reports of 2^63 reclaimable on a node: refused, not summed */
	EXPECT_EQ(-EINVAL, umm_report_one(a, UMM_TIER_HOST_NODE, 0,
					  1ull << 63, 1ull << 63));
	EXPECT_EQ(-EINVAL, umm_report_one(b, UMM_TIER_HOST_NODE, 0,
					  1ull << 63, 1ull << 63));
	close(b);
	EXPECT_EQ(2 * GiB, gpu_attr(gpu, "used_bytes"));
	close(a);
	EXPECT_EQ(0, gpu_attr(gpu, "used_bytes"));
	EXPECT_EQ(0, attr_write("gpus/gpu9/budget_bytes", "0"));
}

/* ---- names cannot forge rows ------------------------------------------ */

/* The debugfs row of @pid, or "" (the table is read whole into @buf). */
static const char *client_row(char *buf, size_t len, pid_t pid)
{
	char want[32];
	char *line;

	if (attr_read(UMM_DEBUGFS "/clients", buf, len) < 0)
		return "";
	snprintf(want, sizeof(want), "%d ", pid);
	for (line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
		if (!strncmp(line, want, strlen(want)))
			return line;
	return "";
}

static int words(const char *line)
{
	int n = 0;

	for (const char *p = line; *p; p++)
		if (*p != ' ' && (p == line || p[-1] == ' '))
			n++;
	return n;
}

TEST(names_cannot_forge_rows)
{
	char buf[65536], copy[65536];
	int go[2], ready[2], status, fd;
	const char *row;
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		prctl(PR_SET_NAME, "x\n4242 fake 0");
		fd = umm_open(0);
		c = fd < 0 ? 'e' : 'o';
		if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(1);
		_exit(0);
	}
	ASSERT_EQ(1, read(ready[0], &c, 1));
	ASSERT_EQ('o', c);

	row = client_row(buf, sizeof(buf), pid);
	EXPECT_NE(0, strlen(row));
	EXPECT_NE(NULL, strstr(row, " x\\0124242\\040fake\\0400 "))
		TH_LOG("row: %s", row);
	ASSERT_LT(0, attr_read(UMM_DEBUGFS "/clients", copy, sizeof(copy)));
	for (char *l = strtok(copy, "\n"); l; l = strtok(NULL, "\n")) {
		EXPECT_NE(0, strncmp(l, "4242 ", 5)) TH_LOG("forged: %s", l);
		if (strncmp(l, "pid ", 4))
			EXPECT_EQ(14, words(l)) TH_LOG("row: %s", l);
	}

	/* a handshake name is printable, but may hold blanks and backslashes */
	fd = umm_client("a b\\c", 0, 0, 0);
	ASSERT_LE(0, fd);
	row = client_row(buf, sizeof(buf), getpid());
	EXPECT_NE(NULL, strstr(row, " a\\040b\\134c ")) TH_LOG("row: %s", row);
	close(fd);

	EXPECT_EQ(1, write(go[1], "g", 1));
	waitpid(pid, &status, 0);
	EXPECT_EQ(0, status);
}

/* ---- decimal or 0x hex ------------------------------------------------ */

/* Write @val to @file and read the number back; UINT64_MAX on failure. */
static uint64_t read_back(const char *file, const char *val)
{
	uint64_t v;

	if (attr_write(file, val) || attr_read_u64(file, &v))
		return UINT64_MAX;
	return v;
}

TEST(numbers_are_decimal_or_hex)
{
	uint64_t old;

	ASSERT_EQ(0, attr_read_u64("event_min_interval_ms", &old));
	EXPECT_EQ(400, read_back("event_min_interval_ms", "0400"));
	EXPECT_EQ(8, read_back("event_min_interval_ms", "08"));
	EXPECT_EQ(16, read_back("event_min_interval_ms", "0x10"));
	EXPECT_EQ(-EINVAL, attr_write("event_min_interval_ms", "0x"));
	EXPECT_EQ(-EINVAL, attr_write("event_min_interval_ms", "0x0x10"));
	EXPECT_EQ(-EINVAL, attr_write("event_min_interval_ms", "-1"));
	EXPECT_EQ(0, attr_write_u64("event_min_interval_ms", old));

	EXPECT_EQ(10, read_back("gpus/gpu3/budget_bytes", "010"));
	EXPECT_EQ(0, attr_write("gpus/gpu3/budget_bytes", "0"));

	/* gpu 010 is gpu 10, not gpu 8 */
	EXPECT_EQ(0, umm_inject("gpu 010 critical"));
	EXPECT_TRUE(gpu_level_is(10, "critical"));
	EXPECT_TRUE(gpu_level_is(8, "normal"));
	EXPECT_EQ(0, umm_inject("gpu 0xa clear"));
	EXPECT_TRUE(gpu_level_is(10, "normal"));
	EXPECT_EQ(-EINVAL, umm_inject("node 00x1 low"));
}

/* ---- ACKs: answer first, count after; unsigned, saturating sums -------- */

/* An event on @gpu that asks @fd to free and wants an ACK: its seq. */
static uint64_t ackable_event(int fd, int gpu)
{
	char cmd[32];
	struct umm_event ev;

	snprintf(cmd, sizeof(cmd), "gpu %d critical", gpu);
	if (umm_report_one(fd, UMM_TIER_GPU, gpu, 64 << 20, 64 << 20) ||
	    umm_inject(cmd) ||
	    umm_wait_tier(fd, UMM_EVENT_GPU_BUDGET, UMM_TIER_GPU, gpu, &ev,
			  5000) != 1 ||
	    !(ev.flags & UMM_EVENT_F_ACK))
		return 0;
	return ev.seq;
}

TEST(ack_unanswered_does_not_count)
{
	size_t psz = (size_t)sysconf(_SC_PAGESIZE);
	uint64_t acks0, acks1, seq, lat = 0;
	struct umm_ack *ro;
	int fd;

	fd = umm_client("ackfault", 0, 0, 0);
	ASSERT_LE(0, fd);
	seq = ackable_event(fd, 11);
	ASSERT_NE(0, seq);
	ro = mmap(NULL, psz, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	*ro = (struct umm_ack){ .size = sizeof(*ro), .seq = seq };
	ASSERT_EQ(0, mprotect(ro, psz, PROT_READ));

	ASSERT_EQ(0, attr_read_u64("acks", &acks0));
	EXPECT_EQ(-1, ioctl(fd, UMM_IOC_ACK, ro));
	EXPECT_EQ(EFAULT, errno);
	ASSERT_EQ(0, attr_read_u64("acks", &acks1));
	EXPECT_EQ(acks0, acks1) TH_LOG("an ACK the caller never saw counted");
	/* the event is still owed an ACK */
	EXPECT_EQ(0, umm_ack(fd, seq, 0, &lat));
	EXPECT_LT(0, lat);
	EXPECT_EQ(0, umm_inject("gpu 11 clear"));
	close(fd);
	munmap(ro, psz);
}

TEST(bytes_freed_unsigned_and_saturating)
{
	char buf[64];
	uint64_t seq, v;
	int fd;

	fd = umm_client("bigfree", 0, 0, 0);
	ASSERT_LE(0, fd);
	for (int i = 0; i < 2; i++) {
		seq = ackable_event(fd, 12);
		ASSERT_NE(0, seq);
		EXPECT_EQ(0, umm_ack(fd, seq, 1ull << 63, NULL));
		EXPECT_EQ(0, umm_inject("gpu 12 clear"));
		umm_drain(fd);
		ASSERT_LT(0, attr_read("bytes_freed", buf, sizeof(buf)));
		EXPECT_NE('-', buf[0]) TH_LOG("bytes_freed %s", buf);
	}
	/* 2^63 twice: the sum stops at the top instead of wrapping to 0 */
	ASSERT_EQ(0, attr_read_u64("bytes_freed", &v));
	EXPECT_EQ(UINT64_MAX, v);
	ASSERT_LT(0, attr_read("ack_latency_ns_max", buf, sizeof(buf)));
	EXPECT_NE('-', buf[0]);
	close(fd);
}

/* ---- ring memory: capped in all --------------------------------------- */

TEST(ring_memory_capped)
{
	uint64_t old_max, old_len, base, now, ring = ring_alloc_bytes(4096);
	int fd[4];

	ASSERT_EQ(0, attr_read_u64("ring_bytes_max", &old_max));
	ASSERT_EQ(0, attr_read_u64("queue_len", &old_len));
	ASSERT_EQ(0, attr_read_u64("ring_bytes", &base));
	/* rings of 4096 + 1 records in whole pages: room for three more */
	ASSERT_EQ(0, attr_write_u64("ring_bytes_max", base + 3 * ring));
	ASSERT_EQ(0, attr_write("queue_len", "4096"));
	for (int i = 0; i < 3; i++) {
		fd[i] = umm_open(0);
		EXPECT_LE(0, fd[i]) TH_LOG("open %d: %s", i, strerror(-fd[i]));
	}
	fd[3] = umm_open(0);
	EXPECT_EQ(-ENOBUFS, fd[3]);
	ASSERT_EQ(0, attr_read_u64("ring_bytes", &now));
	EXPECT_EQ(base + 3 * ring, now);
	/* closing one makes room again */
	if (fd[0] >= 0)
		close(fd[0]);
	fd[0] = umm_open(0);
	EXPECT_LE(0, fd[0]);
	for (int i = 0; i < 4; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	ASSERT_EQ(0, attr_read_u64("ring_bytes", &now));
	EXPECT_EQ(base, now);
	EXPECT_EQ(0, attr_write_u64("queue_len", old_len));
	EXPECT_EQ(0, attr_write_u64("ring_bytes_max", old_max));
}

/*
 * The cap is per user: one user's clients (here nobody's, on a /dev/umm
 * opened up for the test) running into it leave room to the others.
 */
TEST(ring_cap_is_per_user)
{
	uint64_t old_max, old_len, base, ring = ring_alloc_bytes(4096);
	int ready[2], hold[2], fd, res[2] = { 0, 0 };
	struct stat st;
	char c;
	pid_t pid;

	ASSERT_EQ(0, stat(UMM_DEVICE_PATH, &st));
	ASSERT_EQ(0, attr_read_u64("ring_bytes_max", &old_max));
	ASSERT_EQ(0, attr_read_u64("queue_len", &old_len));
	ASSERT_EQ(0, attr_read_u64("ring_bytes", &base));
	ASSERT_EQ(0, attr_write_u64("ring_bytes_max", base + 2 * ring));
	ASSERT_EQ(0, attr_write("queue_len", "4096"));
	ASSERT_EQ(0, chmod(UMM_DEVICE_PATH, 0666));
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(hold));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(hold[1]);
		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(100);
		/* res[0]: rings taken, res[1]: why the next open failed */
		for (res[1] = 0; res[0] < 1024; res[0]++) {
			res[1] = umm_open(0);
			if (res[1] < 0)
				break;
		}
		if (write(ready[1], res, sizeof(res)) != sizeof(res))
			_exit(101);
		if (read(hold[0], &c, 1) < 0)
			_exit(102);
		_exit(0);
	}
	close(hold[0]);
	EXPECT_EQ((ssize_t)sizeof(res), read(ready[0], res, sizeof(res)));
	EXPECT_EQ(-ENOBUFS, res[1]) TH_LOG("nobody took %d rings", res[0]);
	EXPECT_LE(2, res[0]);
	fd = umm_open(0);
	EXPECT_LE(0, fd) TH_LOG("nobody's rings left root no room: %s",
				strerror(-fd));
	if (fd >= 0)
		close(fd);
	close(hold[1]);
	waitpid(pid, NULL, 0);
	close(ready[0]);
	close(ready[1]);
	chmod(UMM_DEVICE_PATH, st.st_mode & 07777);
	EXPECT_EQ(0, attr_write_u64("queue_len", old_len));
	EXPECT_EQ(0, attr_write_u64("ring_bytes_max", old_max));
}

/* memory.current of cgroup directory @cg, or 0. */
static uint64_t cg_current(const char *cg)
{
	char p[128];
	uint64_t v = 0;

	snprintf(p, sizeof(p), "%s/memory.current", cg);
	attr_read_u64(p, &v);
	return v;
}

/*
 * In a child cgroup (cgroup2, memory controller), open a client with a
 * 4 MiB ring: the cgroup's memory grows by at least the ring. Exit status:
 * 0, or what went wrong.
 */
static int ring_charged_in(const char *cg)
{
	char p[128], pid[16];
	uint64_t before, after;
	int fd;

	snprintf(p, sizeof(p), "%s/cgroup.procs", cg);
	snprintf(pid, sizeof(pid), "%d", getpid());
	if (attr_write(p, pid))
		return 10;
	before = cg_current(cg);
	fd = umm_open(0);
	if (fd < 0)
		return 11;
	after = cg_current(cg);
	printf("# memory.current %llu -> %llu after one open\n",
	       (unsigned long long)before, (unsigned long long)after);
	close(fd);
	return after >= before + (4ull << 20) ? 0 : 12;
}

TEST(ring_charged_to_opener_cgroup)
{
	const char *root = "/tmp/umm-cg", *cg = "/tmp/umm-cg/opener";
	uint64_t old_len;
	int status;
	pid_t pid;

	mkdir(root, 0755);
	if (mount("none", root, "cgroup2", 0, NULL) && errno != EBUSY)
		SKIP(return, "no cgroup2: %s", strerror(errno));
	if (attr_write("/tmp/umm-cg/cgroup.subtree_control", "+memory"))
		SKIP(umount(root); return, "no memory controller");
	ASSERT_EQ(0, mkdir(cg, 0755));
	ASSERT_EQ(0, attr_read_u64("queue_len", &old_len));
	ASSERT_EQ(0, attr_write("queue_len", "65536"));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(ring_charged_in(cg));
	waitpid(pid, &status, 0);
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("10: join, 11: open, 12: the ring was not charged");
	EXPECT_EQ(0, attr_write_u64("queue_len", old_len));
	rmdir(cg);
	umount(root);
	rmdir(root);
}

/* ---- structs larger than the module knows ----------------------------- */

#define UMM_IOC_BIGGER(cmd, type)					\
	_IOC(_IOC_DIR(cmd), UMM_IOC_MAGIC, _IOC_NR(cmd), sizeof(type))

struct api_v2 {
	struct umm_api a;
	uint64_t more[2];
};

struct query_v2 {
	struct umm_query q;
	uint64_t more;
};

TEST(larger_structs_accepted_when_zero_tail)
{
	struct api_v2 big = { .a = { .size = sizeof(big),
				     .api = UMM_API_VERSION,
				     .name = "v2" } };
	unsigned int api2 = UMM_IOC_BIGGER(UMM_IOC_API, struct api_v2);
	unsigned int query2 = UMM_IOC_BIGGER(UMM_IOC_QUERY, struct query_v2);
	struct query_v2 q = { .q = { .size = sizeof(q) } };
	struct umm_api small = { .size = 8 };
	int fd;

	fd = umm_open(0);
	ASSERT_LE(0, fd);
	/* a tail the module does not know, not zero: refused, not consumed */
	big.more[1] = 1;
	EXPECT_EQ(-1, ioctl(fd, api2, &big));
	EXPECT_EQ(E2BIG, errno);
	/* the size field must agree with the ioctl's */
	big.more[1] = 0;
	big.a.size = sizeof(big.a);
	EXPECT_EQ(-1, ioctl(fd, api2, &big));
	EXPECT_EQ(EINVAL, errno);
	/* smaller than the first version */
	EXPECT_EQ(-1, ioctl(fd, _IOC(_IOC_READ | _IOC_WRITE, UMM_IOC_MAGIC,
				     _IOC_NR(UMM_IOC_API), 8), &small));
	EXPECT_EQ(EINVAL, errno);

	big.a.size = sizeof(big);
	EXPECT_EQ(0, ioctl(fd, api2, &big)) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(UMM_EVENT_SIZE, big.a.event_size);
	EXPECT_EQ(0, big.more[0]);

	EXPECT_EQ(0, ioctl(fd, query2, &q)) TH_LOG("%s", strerror(errno));
	EXPECT_LE(2, q.q.count);
	q.more = 7;
	EXPECT_EQ(-1, ioctl(fd, query2, &q));
	EXPECT_EQ(E2BIG, errno);
	close(fd);
}

TEST_HARNESS_MAIN
