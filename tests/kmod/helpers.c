// SPDX-License-Identifier: GPL-2.0
/*
 * helpers.c - shared helpers of the umm.ko selftests. See helpers.h.
 */
#include <dirent.h>
#include <grp.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/mempolicy.h>
#include <sys/syscall.h>
#include <signal.h>
#include <sys/mman.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

int umm_open(int flags)
{
	int fd = open(UMM_DEVICE_PATH, O_RDWR | O_CLOEXEC | flags);

	return fd < 0 ? -errno : fd;
}

int umm_handshake(int fd, const char *name, int priority, uint64_t features,
		  struct umm_api *out)
{
	struct umm_api api = {
		.size = sizeof(api),
		.api = UMM_API_VERSION,
		.features = features,
		.priority = priority,
	};

	snprintf(api.name, sizeof(api.name), "%s", name);
	if (ioctl(fd, UMM_IOC_API, &api) < 0)
		return -errno;
	if (out)
		*out = api;
	return 0;
}

int umm_client(const char *name, int priority, uint64_t features, int flags)
{
	int fd = umm_open(flags);
	int ret;

	if (fd < 0)
		return fd;
	ret = umm_handshake(fd, name, priority, features, NULL);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	return fd;
}

int umm_report(int fd, const struct umm_tier_report *t, unsigned int n,
	       unsigned int flags)
{
	struct umm_report r = {
		.size = sizeof(r),
		.flags = flags,
		.count = n,
		.tiers = (uintptr_t)t,
	};

	return ioctl(fd, UMM_IOC_REPORT, &r) < 0 ? -errno : 0;
}

int umm_report_one(int fd, uint32_t tier_type, uint32_t id,
		   uint64_t resident, uint64_t reclaimable)
{
	struct umm_tier_report t = {
		.tier_type = tier_type,
		.tier_id = id,
		.resident_bytes = resident,
		.reclaimable_bytes = reclaimable,
	};

	return umm_report(fd, &t, 1, UMM_REPORT_F_UPDATE);
}

int umm_ack(int fd, uint64_t seq, uint64_t freed, uint64_t *latency_ns)
{
	struct umm_ack a = {
		.size = sizeof(a),
		.seq = seq,
		.bytes_freed = freed,
	};

	if (ioctl(fd, UMM_IOC_ACK, &a) < 0)
		return -errno;
	if (latency_ns)
		*latency_ns = a.latency_ns;
	return 0;
}

int umm_query(int fd, struct umm_level_info *lv, unsigned int room,
	      struct umm_query *q)
{
	struct umm_query lq = {
		.size = sizeof(lq),
		.count = room,
		.levels = (uintptr_t)lv,
	};

	if (ioctl(fd, UMM_IOC_QUERY, &lq) < 0)
		return -errno;
	if (q)
		*q = lq;
	return (int)lq.count;
}

int umm_next_event(int fd, struct umm_event *ev, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;
	int ret;

	do {
		ret = poll(&p, 1, timeout_ms);
	} while (ret < 0 && errno == EINTR);
	if (ret < 0)
		return -errno;
	if (ret == 0)
		return 0;
	if (!(p.revents & POLLIN))
		return (p.revents & POLLHUP) ? -EPIPE : -EIO;
	n = read(fd, ev, sizeof(*ev));
	if (n < 0)
		return errno == EAGAIN ? 0 : -errno;
	if (n != (ssize_t)sizeof(*ev))
		return -EMSGSIZE;
	return 1;
}

int umm_wait_type(int fd, uint32_t type, struct umm_event *ev, int timeout_ms)
{
	uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000ull;
	int ret, left = timeout_ms;

	for (;;) {
		ret = umm_next_event(fd, ev, left);
		if (ret <= 0 || ev->type == type)
			return ret;
		if (timeout_ms < 0)
			continue;
		if (now_ns() >= end)
			return 0;
		left = (int)((end - now_ns()) / 1000000ull);
	}
}

int umm_wait_tier(int fd, uint32_t type, uint32_t tier_type, uint32_t id,
		  struct umm_event *ev, int timeout_ms)
{
	uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000ull;
	int ret, left = timeout_ms;

	for (;;) {
		ret = umm_wait_type(fd, type, ev, left);
		if (ret <= 0)
			return ret;
		if (ev->tier_type == tier_type && ev->tier_id == id)
			return 1;
		if (timeout_ms < 0)
			continue;
		if (now_ns() >= end)
			return 0;
		left = (int)((end - now_ns()) / 1000000ull);
	}
}

int umm_drain_tier(int fd, uint32_t tier_type, uint32_t id)
{
	struct umm_event ev;
	int n = 0;

	while (umm_next_event(fd, &ev, 0) == 1)
		if ((tier_type == UMM_TIER_NONE && id == ~0u) ||
		    (ev.tier_type == tier_type && ev.tier_id == id))
			n++;
	return n;
}

int umm_drain(int fd)
{
	struct umm_event ev;
	int n = 0;

	while (umm_next_event(fd, &ev, 0) == 1)
		n++;
	return n;
}

const char *umm_event_name(uint32_t type)
{
	static const char *const names[] = {
		[UMM_EVENT_INVALID] = "INVALID",
		[UMM_EVENT_PRESSURE] = "PRESSURE",
		[UMM_EVENT_RELIEF] = "RELIEF",
		[UMM_EVENT_SHRINK] = "SHRINK",
		[UMM_EVENT_OOM] = "OOM",
		[UMM_EVENT_GPU_BUDGET] = "GPU_BUDGET",
		[UMM_EVENT_OVERFLOW] = "OVERFLOW",
		[UMM_EVENT_SHUTDOWN] = "SHUTDOWN",
		[UMM_EVENT_ENABLED] = "ENABLED",
		[UMM_EVENT_DISABLED] = "DISABLED",
	};

	if (type < sizeof(names) / sizeof(names[0]) && names[type])
		return names[type];
	return "?";
}

static void full_path(const char *path, char *buf, size_t len)
{
	if (path[0] == '/')
		snprintf(buf, len, "%s", path);
	else
		snprintf(buf, len, "%s/%s", UMM_SYSFS, path);
}

int attr_read(const char *path, char *buf, size_t len)
{
	char p[512];
	ssize_t n;
	int fd;

	full_path(path, p, sizeof(p));
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	buf[n] = '\0';
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return (int)n;
}

/* The whole of @path as a number: into @u (strtoull) or else @s (strtoll). */
static int attr_read_num(const char *path, uint64_t *u, int64_t *s)
{
	char buf[64], *end;
	int ret = attr_read(path, buf, sizeof(buf));

	if (ret < 0)
		return ret;
	errno = 0;
	if (u)
		*u = strtoull(buf, &end, 0);
	else
		*s = strtoll(buf, &end, 0);
	if (errno || end == buf || *end)
		return -EPROTO;
	return 0;
}

int attr_read_u64(const char *path, uint64_t *v)
{
	return attr_read_num(path, v, NULL);
}

int attr_read_s64(const char *path, int64_t *v)
{
	return attr_read_num(path, NULL, v);
}

int attr_write(const char *path, const char *val)
{
	size_t len = strlen(val);
	char p[512];
	ssize_t n;
	int fd;

	full_path(path, p, sizeof(p));
	fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, val, len);
	if (n < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	return (size_t)n == len ? 0 : -EIO;
}

int attr_write_u64(const char *path, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return attr_write(path, buf);
}

int attr_mode(const char *path)
{
	struct stat st;
	char p[512];

	full_path(path, p, sizeof(p));
	if (stat(p, &st) < 0)
		return -errno;
	return (int)(st.st_mode & 07777);
}

uint64_t ring_alloc_bytes(uint64_t queue_len)
{
	uint64_t bytes = (queue_len + 1) * sizeof(struct umm_event);
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), size = 8;

	if (bytes > page)
		return (bytes + page - 1) / page * page;
	/* the kmalloc sizes: powers of two from 8, and 96 and 192 */
	while (size < bytes) {
		if ((size == 64 && bytes <= 96) || (size == 128 && bytes <= 192))
			return size * 3 / 2;
		size *= 2;
	}
	return size;
}

int umm_inject(const char *spec)
{
	return attr_write("inject", spec);
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t node_free_bytes(int node)
{
	char path[128], line[256];
	unsigned long long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path),
		 "/sys/devices/system/node/node%d/meminfo", node);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "MemFree:");

		if (p && sscanf(p + 8, "%llu", &kb) == 1)
			break;
	}
	fclose(f);
	return (uint64_t)kb * 1024;
}

uint64_t node_attr_u64(int nid, const char *what)
{
	char p[128];
	uint64_t v = 0;

	snprintf(p, sizeof(p), "nodes/node%d/%s", nid, what);
	attr_read_u64(p, &v);
	return v;
}

static const char *const wm_names[3] = { "low_bp", "medium_bp", "critical_bp" };

void node_wm_save(int nid, uint64_t wm[3])
{
	for (int i = 0; i < 3; i++)
		wm[i] = node_attr_u64(nid, wm_names[i]);
}

void node_wm_restore(int nid, const uint64_t wm[3])
{
	uint64_t cur[3];
	char p[128];

	node_wm_save(nid, cur);
	for (int i = 0; i < 3; i++) {
		if (wm[i] <= cur[i])
			continue;
		snprintf(p, sizeof(p), "nodes/node%d/%s", nid, wm_names[i]);
		attr_write_u64(p, wm[i]);
	}
	for (int i = 2; i >= 0; i--) {
		if (wm[i] >= cur[i])
			continue;
		snprintf(p, sizeof(p), "nodes/node%d/%s", nid, wm_names[i]);
		attr_write_u64(p, wm[i]);
	}
}

int count_iou_workers(void)
{
	char path[320], comm[64];
	struct dirent *de;
	int n = 0;
	DIR *d;

	d = opendir("/proc/self/task");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 de->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) &&
		    !strncmp(comm, "iou-wrk-", 8))
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

int run_as_nobody(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(100);
		_exit(fn(arg));
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	if (!WIFEXITED(status))
		return -ECHILD;
	return WEXITSTATUS(status);
}

static void hog_child(int node, int oom_adj, int go, int done)
{
	unsigned long mask = 1ul << node;
	uint64_t bytes;
	long page = sysconf(_SC_PAGESIZE);
	int free_run = 0;

	set_oom_score_adj(oom_adj);
	/* the system call itself: static libnuma.a drags its resolver
	 * (getaddrinfo) into every program that calls any of it */
	if (node < 0 || node >= 64 ||
	    syscall(SYS_set_mempolicy, MPOL_BIND, &mask, sizeof(mask) * 8))
		_exit(20);
	for (;;) {
		char *p;

		if (!free_run && read(go, &bytes, sizeof(bytes)) !=
		    (ssize_t)sizeof(bytes))
			_exit(0);
		if (bytes & (1ull << 63)) {	/* run free from now on */
			bytes &= ~(1ull << 63);
			free_run = 1;
		}
		p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			_exit(21);
		/* Order-0 faults, as most real allocations: huge-page faults
		 * never wake kswapd (they dip below the low watermark down to
		 * min without reclaim), so the shrinker would not be asked. */
		madvise(p, bytes, MADV_NOHUGEPAGE);
		for (uint64_t off = 0; off < bytes; off += (uint64_t)page)
			p[off] = 1;
		if (!free_run && write(done, "", 1) != 1)
			_exit(22);
	}
}

int hog_start(struct hog *h, int node, int oom_adj)
{
	int go[2], done[2];

	memset(h, 0, sizeof(*h));
	if (pipe2(go, O_CLOEXEC) || pipe2(done, O_CLOEXEC))
		return -errno;
	h->pid = fork();
	if (h->pid < 0)
		return -errno;
	if (h->pid == 0) {
		close(go[1]);
		close(done[0]);
		hog_child(node, oom_adj, go[0], done[1]);
	}
	close(go[0]);
	close(done[1]);
	h->go = go[1];
	h->done = done[0];
	return 0;
}

int hog_step(struct hog *h, uint64_t bytes)
{
	char c;

	if (write(h->go, &bytes, sizeof(bytes)) != (ssize_t)sizeof(bytes))
		return -EPIPE;
	if (read(h->done, &c, 1) != 1)
		return -ECHILD;
	h->bytes += bytes;
	return 0;
}

int hog_run_free(struct hog *h, uint64_t step)
{
	step |= 1ull << 63;
	return write(h->go, &step, sizeof(step)) == (ssize_t)sizeof(step) ?
		0 : -EPIPE;
}

int hog_stop(struct hog *h)
{
	int status = 0;

	if (h->pid <= 0)
		return -ECHILD;
	kill(h->pid, SIGKILL);
	waitpid(h->pid, &status, 0);
	close(h->go);
	close(h->done);
	h->pid = 0;
	return status;
}

static int cache_child(const char *path, uint64_t bytes, int node)
{
	unsigned long mask = 1ul << (node & 63);
	static char buf[1 << 20];
	int fd;

	if (node >= 0 &&
	    syscall(SYS_set_mempolicy, MPOL_BIND, &mask, sizeof(mask) * 8))
		return 20;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return 21;
	memset(buf, 0x5a, sizeof(buf));
	for (uint64_t off = 0; off < bytes; off += sizeof(buf)) {
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			return 22;
		if (!((off + sizeof(buf)) % (16 << 20)) && fsync(fd))
			return 23;
	}
	return fsync(fd) || close(fd) ? 24 : 0;
}

int cache_fill(const char *path, uint64_t bytes, int node)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0)
		_exit(cache_child(path, bytes, node));
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -ECHILD;
}

long long vmstat(const char *name)
{
	char key[64];
	long long v, ret = -ENOENT;
	FILE *f = fopen("/proc/vmstat", "re");

	if (!f)
		return -errno;
	while (fscanf(f, "%63s %lld", key, &v) == 2)
		if (!strcmp(key, name))
			ret = v;
	fclose(f);
	return ret;
}

uint64_t node_min_wmark_bytes(int node)
{
	char line[256];
	unsigned long long v, pages = 0;
	int n, in_node = 0;
	FILE *f = fopen("/proc/zoneinfo", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Node %d,", &n) == 1)
			in_node = n == node;
		else if (in_node && sscanf(line, " min %llu", &v) == 1)
			pages += v;
	}
	fclose(f);
	return (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

int node_unreclaimable(int node)
{
	char line[256];
	int n, v, in_node = 0, ret = 0;
	FILE *f = fopen("/proc/zoneinfo", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Node %d,", &n) == 1)
			in_node = n == node;
		else if (in_node &&
			 sscanf(line, " node_unreclaimable: %d", &v) == 1)
			ret |= v;
	}
	fclose(f);
	return ret;
}

int sysctl_write(const char *path, const char *val)
{
	char p[256];

	snprintf(p, sizeof(p), "/proc/sys/%s", path);
	return attr_write(p, val);
}

int sysctl_read(const char *path, char *buf, size_t len)
{
	char p[256];

	snprintf(p, sizeof(p), "/proc/sys/%s", path);
	return attr_read(p, buf, len);
}

int set_oom_score_adj(int adj)
{
	char v[16];

	snprintf(v, sizeof(v), "%d", adj);
	return attr_write("/proc/self/oom_score_adj", v);
}
