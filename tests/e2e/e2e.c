/* SPDX-License-Identifier: MIT */
/*
 * e2e.c - the trainer, the level sampler and small helpers of the
 * end-to-end scenarios (see e2e.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <numaif.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"

#define UPD_A 6364136223846793005ull
#define UPD_B 1442695040888963407ull

uint64_t e2e_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double e2e_ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

int e2e_read_str(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return 0;
}

int e2e_read_u64(const char *path, uint64_t *v)
{
	char buf[64], *end;
	int ret = e2e_read_str(path, buf, sizeof(buf));

	if (ret)
		return ret;
	*v = strtoull(buf, &end, 0);
	return end == buf ? -EINVAL : 0;
}

int e2e_write_str(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	close(fd);
	return n < 0 ? -errno : 0;
}

bool e2e_have_umm(void)
{
	return access("/dev/umm", R_OK | W_OK) == 0;
}

int e2e_fill_rate(unsigned int *mib_s)
{
	const char *v = getenv("E2E_FILL_RATE");
	unsigned long long r;
	char *end;

	*mib_s = 16;
	if (!v)
		return 0;
	errno = 0;
	r = strtoull(v, &end, 10);
	if (errno || v[0] < '0' || v[0] > '9' || *end || r < 1 || r > 4096) {
		printf("# E2E_FILL_RATE=%s: want MiB/s in decimal, 1..4096\n", v);
		return -EINVAL;
	}
	*mib_s = (unsigned int)r;
	return 0;
}

void e2e_set_watermarks(bool report)
{
	static const char *const knobs[][2] = {
		{ "low_bp", "2500" }, { "medium_bp", "1500" },
		{ "critical_bp", "800" },
	};
	char path[128];

	for (int n = 0; n < 2; n++) {
		for (size_t i = 0; i < 3; i++) {
			snprintf(path, sizeof(path), UMM_SYSFS "/nodes/node%d/%s",
				 n, knobs[i][0]);
			if (access(path, W_OK))
				continue;
			if (e2e_write_str(path, knobs[i][1]) && report)
				printf("# cannot set %s\n", path);
		}
	}
}

int e2e_full_read(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		got += (size_t)n;
	}
	return 0;
}

void e2e_sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

int e2e_status_code(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return 255;
}

int e2e_node_free(int node, uint64_t *free_b, uint64_t *total_b)
{
	char path[96], buf[4096], *p;
	unsigned long long kb;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo",
		 node);
	if (e2e_read_str(path, buf, sizeof(buf)))
		return -ENOENT;
	p = strstr(buf, "MemTotal:");
	if (!p || sscanf(p, "MemTotal: %llu", &kb) != 1)
		return -EIO;
	*total_b = kb * 1024;
	p = strstr(buf, "MemFree:");
	if (!p || sscanf(p, "MemFree: %llu", &kb) != 1)
		return -EIO;
	*free_b = kb * 1024;
	return 0;
}

int e2e_node_kept(int node, uint64_t *min_b, uint64_t *pcp_cap_b,
		  uint64_t *pcp_now_b)
{
	unsigned long long min = 0, cap = 0, now = 0, v, high = 0;
	FILE *f = fopen("/proc/zoneinfo", "r");
	long page = sysconf(_SC_PAGESIZE);
	bool mine = false, seen = false, pagesets = false, have_max = false;
	char line[256];
	int n;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Node %d, zone", &n) == 1) {
			cap += have_max ? 0 : high;
			high = 0;
			mine = n == node;
			seen |= mine;
			pagesets = have_max = false;
			continue;
		}
		if (!mine)
			continue;
		if (strstr(line, "pagesets")) {
			pagesets = true;
		} else if (!pagesets && sscanf(line, " min %llu", &v) == 1) {
			min += v;
		} else if (pagesets && sscanf(line, " count: %llu", &v) == 1) {
			now += v;
		} else if (pagesets && sscanf(line, " high_max: %llu", &v) == 1) {
			cap += v;
			have_max = true;
		} else if (pagesets && sscanf(line, " high: %llu", &v) == 1) {
			high += v;
		}
	}
	cap += have_max ? 0 : high;
	fclose(f);
	if (!seen)
		return -ENOENT;
	if (min_b)
		*min_b = min * (uint64_t)page;
	if (pcp_cap_b)
		*pcp_cap_b = cap * (uint64_t)page;
	if (pcp_now_b)
		*pcp_now_b = now * (uint64_t)page;
	return 0;
}

/* Sums "N<node>=<pages>" of every mapping, in its own page size. */
int e2e_self_node_bytes(uint64_t *bytes, int nnodes)
{
	FILE *f = fopen("/proc/self/numa_maps", "r");
	char line[1024];

	if (!f)
		return -errno;
	memset(bytes, 0, sizeof(*bytes) * (size_t)nnodes);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long kb = 4, pages;
		char *p = strstr(line, "kernelpagesize_kB=");
		int node;

		if (p)
			sscanf(p, "kernelpagesize_kB=%llu", &kb);
		for (p = strstr(line, " N"); p; p = strstr(p + 1, " N"))
			if (sscanf(p, " N%d=%llu", &node, &pages) == 2 &&
			    node >= 0 && node < nnodes)
				bytes[node] += pages * kb * 1024;
	}
	fclose(f);
	return 0;
}

int e2e_bind_node(int node)
{
	unsigned long mask[16] = { 0 };

	mask[node / 64] = 1ul << (node % 64);
	return set_mempolicy(MPOL_BIND, mask, 1024 + 1) ? -errno : 0;
}

/*
 * The sim backend mlocks its "pinned" pool where it may. Locked memory is
 * what the OOM reaper cannot take back, so an OOM-killed trainer would free
 * its memory only once it has fully exited, and meanwhile the kernel picks
 * a second victim. Trainers are not root in real life: drop CAP_IPC_LOCK
 * and the lock limit, and the pool falls back to plain memory.
 */
int e2e_no_mlock(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2];
	struct rlimit rl = { 0, 0 };

	if (syscall(SYS_capget, &h, d))
		return -errno;
	d[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
	d[CAP_IPC_LOCK / 32].permitted &= ~(1u << (CAP_IPC_LOCK % 32));
	if (syscall(SYS_capset, &h, d))
		return -errno;
	return setrlimit(RLIMIT_MEMLOCK, &rl) ? -errno : 0;
}

int e2e_oom_adj(int adj)
{
	char v[16];

	snprintf(v, sizeof(v), "%d", adj);
	return e2e_write_str("/proc/self/oom_score_adj", v);
}

int e2e_node_level(int node)
{
	static const char *const names[] = { "invalid", "normal", "low",
					     "medium", "critical" };
	char path[96], buf[32];

	snprintf(path, sizeof(path), UMM_SYSFS "/nodes/node%d/level", node);
	if (e2e_read_str(path, buf, sizeof(buf)))
		return 0;
	for (int i = 1; i < 5; i++)
		if (!strcmp(buf, names[i]))
			return i;
	return 0;
}

static void *sampler(void *arg)
{
	struct e2e_sampler *s = arg;
	struct timespec ts = { 0, 5000000 };

	while (!s->stop) {
		int lv = e2e_node_level(s->node);
		uint64_t now = e2e_now_ns();

		for (int i = 2; i <= lv && i < 5; i++)
			if (!s->first_ns[i])
				s->first_ns[i] = now;
		if (lv > s->max_level)
			s->max_level = lv;
		nanosleep(&ts, NULL);
	}
	return NULL;
}

void e2e_sampler_start(struct e2e_sampler *s, int node)
{
	memset(s, 0, sizeof(*s));
	s->node = node;
	s->t0 = e2e_now_ns();
	pthread_create(&s->thread, NULL, sampler, s);
}

void e2e_sampler_stop(struct e2e_sampler *s)
{
	s->stop = true;
	pthread_join(s->thread, NULL);
}

/* ---- trainer ---------------------------------------------------------- */

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

static void on_log(void *arg, int level, const char *msg)
{
	struct trainer *t = arg;
	int n;

	/* at the monotonic time (s), as the kernel log's stamps read */
	if (getenv("E2E_DEBUG")) {
		printf("# [%12.6f] libum[%d] L%d %s\n",
		       (double)e2e_now_ns() / 1e9, (int)getpid(), level, msg);
		fflush(stdout);
	}
	pthread_mutex_lock(&t->lock);
	if (strstr(msg, "is under pressure; new host copies go to node"))
		t->steered_away++;
	if (level <= UM_LOG_ERR)
		t->errs++;
	else if (level == UM_LOG_WARN)
		t->warns++;
	if (level <= UM_LOG_INFO && t->loglen < sizeof(t->log)) {
		n = snprintf(t->log + t->loglen, sizeof(t->log) - t->loglen,
			     "L%d %s\n", level, msg);
		if (n > 0)
			t->loglen += (size_t)n;
		if (t->loglen > sizeof(t->log))
			t->loglen = sizeof(t->log);
	}
	pthread_mutex_unlock(&t->lock);
}

static void on_event(void *arg, const struct um_event *ev)
{
	struct trainer *t = arg;

	pthread_mutex_lock(&t->lock);
	switch (ev->type) {
	case UM_EVENT_PRESSURE:
		if (ev->level >= 1) {
			if (!t->first_pressure_ns)
				t->first_pressure_ns = e2e_now_ns();
			t->pressure_events++;
			if (ev->level > t->max_level)
				t->max_level = ev->level;
		}
		break;
	case UM_EVENT_EVICTED:
		t->evicted++;
		break;
	case UM_EVENT_ERROR:
		t->errors++;
		break;
	}
	pthread_mutex_unlock(&t->lock);
}

int trainer_init(struct trainer *t, const struct trainer_cfg *cfg)
{
	struct um_config c;
	int ret;

	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
	t->cfg = *cfg;
	um_config_init(&c);
	c.backend = UM_BACKEND_SIM;
	c.sim_capacity = cfg->sim_capacity;
	c.device_budget = cfg->sim_capacity;
	c.spill_dir = cfg->spill_dir;
	/* a pool chunk per region: a moved region gives its node memory back */
	c.pool_chunk = cfg->region_bytes;
	c.log = on_log;
	c.log_arg = t;
	c.log_level = getenv("E2E_DEBUG") ? UM_LOG_DEBUG : UM_LOG_INFO;
	ret = um_context_create(&c, &t->ctx);
	if (ret)
		return ret;
	um_set_event_callback(t->ctx, on_event, t);
	t->r = calloc((size_t)cfg->nregions, sizeof(*t->r));
	if (!t->r)
		return -ENOMEM;
	for (int i = 0; i < cfg->nregions; i++) {
		struct um_region_desc d = {
			.size = sizeof(d),
			.kind = UM_KIND_OPTIMIZER_STATE,
			.priority = cfg->priority,
			.bytes = cfg->region_bytes,
		};
		uint64_t *w;
		char name[32];

		snprintf(name, sizeof(name), "adam.%d", i);
		d.name = name;
		ret = um_alloc(t->ctx, &d, &t->r[i]);
		if (ret)
			return ret;
		ret = um_acquire(t->ctx, t->r[i], UM_TIER_GPU(0), NULL);
		if (!ret)
			ret = um_wait(t->ctx, t->r[i]);
		if (!ret)
			ret = um_ptr(t->ctx, t->r[i], (void **)&w);
		if (ret)
			return ret;
		for (uint64_t k = 0; k < cfg->region_bytes / 8; k++)
			w[k] = mix64(((uint64_t)i << 40) + k);
		ret = um_release(t->ctx, t->r[i]);
		if (ret)
			return ret;
	}
	return um_wait_all(t->ctx);
}

int trainer_step(struct trainer *t)
{
	for (int i = 0; i < t->cfg.nregions; i++) {
		uint64_t *w;
		int ret;

		ret = um_acquire(t->ctx, t->r[i], UM_TIER_GPU(0), NULL);
		if (!ret)
			ret = um_wait(t->ctx, t->r[i]);
		if (!ret)
			ret = um_ptr(t->ctx, t->r[i], (void **)&w);
		if (ret)
			return ret;
		for (uint64_t k = 0; k < t->cfg.region_bytes / 8; k++)
			w[k] = w[k] * UPD_A + UPD_B;
		ret = um_release(t->ctx, t->r[i]);
		if (ret)
			return ret;
	}
	t->steps++;
	return 0;
}

int trainer_verify(struct trainer *t)
{
	uint64_t ak = 1, bk = 0;
	int bad = 0;

	/* f^k(w) = ak * w + bk, from f(w) = A w + B */
	for (uint64_t s = 0; s < t->steps; s++) {
		bk = bk * UPD_A + UPD_B;
		ak *= UPD_A;
	}
	for (int i = 0; i < t->cfg.nregions; i++) {
		uint64_t *w;

		if (um_acquire(t->ctx, t->r[i], UM_TIER_GPU(0), NULL) ||
		    um_wait(t->ctx, t->r[i]) ||
		    um_ptr(t->ctx, t->r[i], (void **)&w)) {
			bad++;
			continue;
		}
		for (uint64_t k = 0; k < t->cfg.region_bytes / 8; k++) {
			if (w[k] != mix64(((uint64_t)i << 40) + k) * ak + bk) {
				bad++;
				printf("# region %d differs at word %llu\n", i,
				       (unsigned long long)k);
				break;
			}
		}
		um_release(t->ctx, t->r[i]);
	}
	return bad;
}

void trainer_where(struct trainer *t, uint64_t *host, int nnodes,
		   uint64_t *spill, uint64_t *device)
{
	struct um_stats st = { .size = sizeof(st) };

	if (um_stats_get(t->ctx, &st))
		return;
	for (int i = 0; i < nnodes && i < UM_STATS_MAX_NODES; i++)
		host[i] = st.host[i].current;
	if (spill)
		*spill = st.spill.current;
	if (device)
		*device = st.device[0].current;
}

void trainer_fini(struct trainer *t)
{
	if (t->ctx) {
		for (int i = 0; t->r && i < t->cfg.nregions; i++)
			if (t->r[i])
				um_free(t->ctx, t->r[i]);
		um_context_destroy(t->ctx);
	}
	free(t->r);
	t->ctx = NULL;
	t->r = NULL;
}

void trainer_dump_log(struct trainer *t)
{
	char *line, *save = NULL, *copy;

	pthread_mutex_lock(&t->lock);
	copy = strndup(t->log, t->loglen);
	pthread_mutex_unlock(&t->lock);
	if (!copy)
		return;
	for (line = strtok_r(copy, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		printf("# libum: %s\n", line);
	free(copy);
}

/* ---- processes -------------------------------------------------------- */

pid_t e2e_spawn_umpressure(const char *const *argv, const char *out_path)
{
	const char *args[32];
	pid_t pid;
	int n = 0;

	args[n++] = "umpressure";
	while (argv[n - 1] && n < 31) {
		args[n] = argv[n - 1];
		n++;
	}
	args[n] = NULL;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			close(fd);
		}
		execvp(args[0], (char *const *)args);
		_exit(127);
	}
	return pid;
}

int e2e_wait(pid_t pid)
{
	int status = 0;

	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

/* Print a file to @out, a "# <prefix>" before each line. */
static void cat_to(FILE *out, const char *path, const char *prefix)
{
	char line[512];
	FILE *f = fopen(path, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		fprintf(out, "# %s%s", prefix, line);
	fclose(f);
}

/*
 * Each thread of @pid: its name, state, where it waits in the kernel
 * (wchan) and its kernel stack, for a scene that finds its trainer not
 * stepping while it still lives.
 */
void e2e_dump_threads(FILE *out, pid_t pid, const char *prefix)
{
	char dir[64], p[96], comm[64], stat[256], wchan[64];
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		int tid = atoi(de->d_name);
		char *st;

		if (tid <= 0)
			continue;
		snprintf(p, sizeof(p), "%s/%d/comm", dir, tid);
		if (e2e_read_str(p, comm, sizeof(comm)))
			continue;
		snprintf(p, sizeof(p), "%s/%d/stat", dir, tid);
		if (e2e_read_str(p, stat, sizeof(stat)))
			stat[0] = '\0';
		st = strrchr(stat, ')');
		snprintf(p, sizeof(p), "%s/%d/wchan", dir, tid);
		if (e2e_read_str(p, wchan, sizeof(wchan)))
			strcpy(wchan, "?");
		fprintf(out, "# %sthread %d (%s) state %c wchan %s\n", prefix,
			tid, comm, st && st[1] ? st[2] : '?', wchan);
		snprintf(p, sizeof(p), "%s/%d/stack", dir, tid);
		cat_to(out, p, prefix);
	}
	closedir(d);
}

void e2e_cat(const char *path, const char *prefix)
{
	cat_to(stdout, path, prefix);
}
