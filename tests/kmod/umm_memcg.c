// SPDX-License-Identifier: GPL-2.0
/*
 * Description: memory cgroups (v2) as sources. A client with
 * UMM_FEATURE_CGROUP in a cgroup whose memory.max a filler in the same
 * cgroup approaches gets PRESSURE about the cgroup (UMM_TIER_CGROUP, its
 * id, no destination node) before the limit, frees what it is asked and
 * the filler is never OOM-killed (the lead is measured); a client in a
 * sibling cgroup hears nothing; a limit on the parent counts, as does a
 * memory.high below memory.max; the cgroup knobs refuse bad values; a
 * client follows its process to another cgroup, and a cgroup removed
 * under an open client is let go; an OOM kill by the cgroup's limit is
 * told to the clients in that cgroup alone; QUERY lists the watched cgroups, only to
 * clients that asked for them; fast fills (as fast as the VM can fault
 * pages in) get CRITICAL before the OOM kill, of a cgroup and of a node;
 * what a sample costs with 100 watched cgroups. A cgroup full of clean
 * page cache reads NORMAL and raises nothing; a mixed fill is warned by
 * its anonymous part alone. No sampling while no client is open; the
 * fill-rate estimate falls again after a fill.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"

#define MiB (1ull << 20)
#define CG "/sys/fs/cgroup"
#define ROOM_UNLIMITED UINT64_MAX

TEST_TIMEOUT_SET(limit_approached_by_a_filler, 300);
TEST_TIMEOUT_SET(fast_cgroup_fill_gets_critical_first, 300);
TEST_TIMEOUT_SET(fast_node_fill_gets_critical_first, 300);
TEST_TIMEOUT_SET(sample_cost_with_100_cgroups, 300);
TEST_TIMEOUT_SET(query_cost_100_cgroups_1000_clients, 300);
TEST_TIMEOUT_SET(parent_limit_counts, 120);
TEST_TIMEOUT_SET(cgroup_oom_kill_is_told, 120);
TEST_TIMEOUT_SET(cgroup_ids_in_events_are_64_bit, 120);
TEST_TIMEOUT_SET(memory_high_below_max, 120);
TEST_TIMEOUT_SET(thousands_of_clients_open_and_close, 300);
TEST_TIMEOUT_SET(page_cache_reads_normal, 300);
TEST_TIMEOUT_SET(mixed_fill_warned_by_its_anon_part, 300);
TEST_TIMEOUT_SET(sampling_follows_clients_and_fills, 120);

/* ---- cgroupfs --------------------------------------------------------- */

static int cg_ready(void)
{
	int ret = 0;

	if (access(CG "/cgroup.controllers", F_OK) &&
	    mount("none", CG, "cgroup2", 0, NULL))
		return -errno;
	/* a v1 hierarchy just unmounted gives the controller back late */
	for (int i = 0; i < 100; i++) {
		ret = attr_write(CG "/cgroup.subtree_control", "+memory");
		if (!ret)
			break;
		usleep(20000);
	}
	return ret;
}

/* Write @val to @file of cgroup @cg (a path under CG). */
static int cg_write(const char *cg, const char *file, const char *val)
{
	char p[256];

	snprintf(p, sizeof(p), CG "/%s/%s", cg, file);
	return attr_write(p, val);
}

static uint64_t cg_read_key(const char *cg, const char *file,
			    const char *key)
{
	char p[256], k[64];
	unsigned long long v;
	uint64_t ret = 0;
	FILE *f;

	snprintf(p, sizeof(p), CG "/%s/%s", cg, file);
	f = fopen(p, "r");
	if (!f)
		return 0;
	while (fscanf(f, "%63s %llu", k, &v) == 2)
		if (!strcmp(k, key))
			ret = v;
	fclose(f);
	return ret;
}

static int cg_make(const char *cg, const char *max)
{
	char p[256];

	snprintf(p, sizeof(p), CG "/%s", cg);
	if (mkdir(p, 0755) && errno != EEXIST)
		return -errno;
	if (max && cg_write(cg, "memory.max", max))
		return -EIO;
	return 0;
}

/* rmdir, after the tasks left (a killed child may take a moment). */
static int cg_rm(const char *cg)
{
	char p[256];

	snprintf(p, sizeof(p), CG "/%s", cg);
	for (int i = 0; i < 100; i++) {
		if (!rmdir(p) || errno == ENOENT)
			return 0;
		usleep(20000);
	}
	return -errno;
}

/* Move this process into @cg ("" for the root). */
static int cg_enter(const char *cg)
{
	char p[256];

	snprintf(p, sizeof(p), CG "/%s%scgroup.procs", cg, *cg ? "/" : "");
	return attr_write(p, "0");
}

/* The id the module uses: the inode number of the cgroup's directory. */
static uint64_t cg_id(const char *cg)
{
	char p[256];
	struct stat st;

	snprintf(p, sizeof(p), CG "/%s", cg);
	return stat(p, &st) ? 0 : (uint64_t)st.st_ino;
}

/* ---- processes in cgroups ------------------------------------------- */

/*
 * A filler: a child in @cg that allocates and touches memory when told
 * (struct hog's protocol: a byte count per step, bit 63 to run free).
 */
static int filler_start(struct hog *h, const char *cg)
{
	int go[2], done[2];

	memset(h, 0, sizeof(*h));
	if (pipe2(go, O_CLOEXEC) || pipe2(done, O_CLOEXEC))
		return -errno;
	h->pid = fork();
	if (h->pid < 0)
		return -errno;
	if (h->pid == 0) {
		uint64_t bytes;
		int free_run = 0;

		close(go[1]);
		close(done[0]);
		set_oom_score_adj(1000);
		if (cg_enter(cg))
			_exit(20);
		for (;;) {
			char *p;

			if (!free_run && read(go[0], &bytes, sizeof(bytes)) !=
			    (ssize_t)sizeof(bytes))
				_exit(0);
			if (bytes & (1ull << 63)) {
				bytes &= ~(1ull << 63);
				free_run = 1;
			}
			p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED)
				_exit(21);
			madvise(p, bytes, MADV_NOHUGEPAGE);
			for (uint64_t off = 0; off < bytes; off += 4096)
				p[off] = 1;
			if (!free_run && write(done[1], "", 1) != 1)
				_exit(22);
		}
	}
	close(go[0]);
	close(done[1]);
	h->go = go[1];
	h->done = done[0];
	return 0;
}

/* client_in()'s control socket per client fd (fds stay below 1024). */
static int ctl[1024];

/*
 * A client opened by a child in @cg, which sends the file back and then
 * stays there (the client follows the process that opened it) until
 * killed, or exits at once with @leave. Returns the fd; *@pid the child.
 */
static int client_in(const char *cg, const char *name, uint64_t features,
		     int leave, pid_t *pid)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, byte = 'x';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cm;
	int sv[2], fd = -1;
	char c;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -errno;
	*pid = fork();
	if (*pid < 0)
		return -errno;
	if (*pid == 0) {
		/* nothing of the other clients: their ends must see EOF */
		for (int i = 3; i < 1024; i++)
			if (i != sv[1])
				close(i);
		if (cg_enter(cg))
			_exit(20);
		fd = umm_client(name, 0, features, 0);
		if (fd < 0)
			_exit(21);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
		if (sendmsg(sv[1], &msg, 0) != 1)
			_exit(22);
		close(fd);
		/* "m <cg>\n" moves it, end of file ends it */
		if (!leave) {
			char buf[200];
			ssize_t n;

			while ((n = read(sv[1], buf, sizeof(buf) - 1)) > 0) {
				buf[n] = 0;
				if (buf[0] == 'm') {
					buf[strcspn(buf, "\n")] = 0;
					c = cg_enter(buf + 2) ? 'e' : 'k';
					if (write(sv[1], &c, 1) != 1)
						_exit(23);
				}
			}
		}
		_exit(0);
	}
	close(sv[1]);
	if (recvmsg(sv[0], &msg, 0) == 1 && (cm = CMSG_FIRSTHDR(&msg)) &&
	    cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	if (fd < 0 || fd >= 1024) {
		close(sv[0]);
		waitpid(*pid, NULL, 0);
		*pid = 0;
		return -EIO;
	}
	if (leave) {
		close(sv[0]);
		waitpid(*pid, NULL, 0);
		*pid = 0;
	} else {
		ctl[fd] = sv[0];
	}
	return fd;
}

/* Tell client_in()'s child to move to @cg; 0 when it did. */
static int client_move(int fd, const char *cg)
{
	char buf[200], c = 0;
	int len = snprintf(buf, sizeof(buf), "m %s\n", cg);

	if (write(ctl[fd], buf, len) != len || read(ctl[fd], &c, 1) != 1)
		return -EIO;
	return c == 'k' ? 0 : -EIO;
}

static void client_end(int fd, pid_t pid)
{
	close(fd);
	if (pid > 0) {
		close(ctl[fd]);
		ctl[fd] = -1;
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

/* ---- the module ------------------------------------------------------- */

/* The QUERY entry of cgroup @id, 1 when found. */
static int query_cgroup(int fd, uint64_t id, struct umm_level_info *out)
{
	struct umm_level_info lv[512];
	int n = umm_query(fd, lv, 512, NULL);

	for (int i = 0; i < n && i < 512; i++)
		if (lv[i].tier_type == UMM_TIER_CGROUP &&
		    (lv[i].tier_id | (uint64_t)lv[i].tier_id_hi << 32) == id) {
			if (out)
				*out = lv[i];
			return 1;
		}
	return 0;
}

static int query_cgroups(int fd)
{
	struct umm_level_info lv[512];
	int n = umm_query(fd, lv, 512, NULL), k = 0;

	for (int i = 0; i < n && i < 512; i++)
		k += lv[i].tier_type == UMM_TIER_CGROUP;
	return k;
}

static uint64_t watched(void)
{
	uint64_t v = ~0ull;

	attr_read_u64("cgroup/watched", &v);
	return v;
}

/* Wait (up to 2 s) until cgroup/watched reads @n. */
static int watched_settles(uint64_t n)
{
	for (int i = 0; i < 100; i++) {
		if (watched() == n)
			return 1;
		usleep(20000);
	}
	return 0;
}

/* Does the debugfs table list cgroup @id? */
static int debugfs_lists(uint64_t id)
{
	char line[512];
	int found = 0;
	FILE *f = fopen(UMM_DEBUGFS "/cgroups", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strtoull(line, NULL, 10) == id)
			found = 1;
	fclose(f);
	return found;
}

struct sample_stats {
	unsigned long long samples, ns_sum, ns_avg, ns_max, ns_last;
	unsigned int next_ms, cgroups;
	unsigned long long peak, late_max, late;
};

static int sample_stats(struct sample_stats *s)
{
	char line[256];
	FILE *f = fopen(UMM_DEBUGFS "/sample", "r");
	int n = 0;

	if (!f)
		return -errno;
	if (fgets(line, sizeof(line), f))
		n = fscanf(f, "%llu %llu %llu %llu %llu %u %u %llu %llu %llu",
			   &s->samples, &s->ns_sum, &s->ns_avg, &s->ns_max,
			   &s->ns_last, &s->next_ms, &s->cgroups, &s->peak,
			   &s->late_max, &s->late);
	fclose(f);
	return n == 10 ? 0 : -EINVAL;
}

/*
 * A fill that got no CRITICAL counts against the module unless the
 * sampling work itself ran late meanwhile (late_samples grew: the VM's
 * CPUs were not run in time by a loaded host), which no delay chosen by
 * the module can help.
 */
static int late_since(const struct sample_stats *before)
{
	struct sample_stats now;

	if (sample_stats(&now))
		return 0;
	return (int)(now.late - before->late);
}

static const char *level_name(uint32_t l)
{
	static const char *const n[] = { "?", "normal", "low", "medium",
					 "critical" };

	return l < 5 ? n[l] : "?";
}

/* ---- tests ------------------------------------------------------------ */

/*
 * With the memory controller on a cgroup v1 hierarchy there are no cgroup
 * sources: the handshake leaves the feature out of its reply, nothing is
 * watched, QUERY lists no cgroup. First: once the controller is enabled on
 * cgroup v2 it cannot be mounted as v1.
 */
TEST(cgroup_v1_gives_node_sources_only)
{
	const char *dir = "/tmp/memcg-v1";
	struct umm_api a;
	int fd;

	mkdir(dir, 0755);
	if (mount("none", dir, "cgroup", 0, "memory"))
		SKIP(return, "cannot mount the memory controller as v1: %s",
		     strerror(errno));
	/*
	 * No child cgroup: memory charged in one would keep the hierarchy
	 * (and the controller) on v1 after the umount, for the whole boot.
	 */
	fd = umm_open(0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, umm_handshake(fd, "v1", 0, UMM_FEATURE_CGROUP, &a))
		TH_LOG("the feature is granted anyway");
	EXPECT_EQ(0, a.features & UMM_FEATURE_CGROUP)
		TH_LOG("reported where it can do nothing");
	EXPECT_EQ(0, query_cgroups(fd));
	EXPECT_EQ(0, watched());
	close(fd);
	EXPECT_EQ(0, umount(dir));
	rmdir(dir);
}

FIXTURE(cg) {
	int ok;
};

FIXTURE_SETUP(cg)
{
	int ret = cg_ready();

	if (ret)
		SKIP(return, "no cgroup v2 memory controller (%d)", ret);
	self->ok = 1;
	ASSERT_EQ(0, attr_write("enabled", "1"));
	ASSERT_EQ(0, set_oom_score_adj(-1000));
}

FIXTURE_TEARDOWN(cg)
{
	cg_enter("");
}

TEST_F(cg, handshake_offers_the_feature)
{
	struct umm_api a;
	int fd = umm_open(0);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, umm_handshake(fd, "feat", 0, UMM_FEATURE_CGROUP, &a));
	EXPECT_TRUE(a.features & UMM_FEATURE_CGROUP);
	close(fd);
}

/*
 * The reported case: memory.max 192 MiB, a client holding 96 MiB (all
 * reclaimable), a filler taking 140 MiB at 32 MiB/s. The client frees
 * what each event asks; the filler must get all of it.
 */
TEST_F(cg, limit_approached_by_a_filler)
{
	const uint64_t limit = 192 * MiB, held0 = 96 * MiB, fill = 140 * MiB;
	uint64_t id, held = held0, first_free = 0, ooms0;
	int fd, events = 0, with_eta = 0, status = 0;
	uint32_t max_level = UMM_LEVEL_NORMAL;
	uint64_t t_first = 0, t0;
	struct umm_level_info li;
	struct umm_event ev;
	struct hog f;
	char *mem;

	ASSERT_EQ(0, cg_make("t1", "201326592"));
	id = cg_id("t1");
	ASSERT_EQ(0, cg_enter("t1"));
	fd = umm_client("trainer", 0, UMM_FEATURE_CGROUP, 0);
	ASSERT_LE(0, fd);
	mem = mmap(NULL, held0, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, mem);
	/*
	 * Small pages: a huge page partly unmapped stays charged. Not in
	 * the filler: pages it shared by fork would stay charged too.
	 */
	madvise(mem, held0, MADV_NOHUGEPAGE);
	madvise(mem, held0, MADV_DONTFORK);
	memset(mem, 1, held0);
	usleep(300000);	/* a sample sees it */
	ASSERT_EQ(0, umm_report_one(fd, UMM_TIER_HOST_NODE, 0, held, held));
	ASSERT_EQ(1, query_cgroup(fd, id, &li)) TH_LOG("QUERY lists t1");
	EXPECT_EQ(limit, li.total_bytes);
	EXPECT_EQ(UMM_LEVEL_F_BUDGET, li.flags);
	EXPECT_LE(held0, li.used_bytes);
	EXPECT_EQ(held0, li.reclaimable_bytes);
	EXPECT_EQ(UMM_LEVEL_NORMAL, li.level);
	EXPECT_EQ(1, debugfs_lists(id));
	ooms0 = cg_read_key("t1", "memory.events", "oom_kill");

	ASSERT_EQ(0, filler_start(&f, "t1"));
	t0 = now_ns();
	while (f.bytes < fill) {
		ASSERT_EQ(0, hog_step(&f, 4 * MiB)) TH_LOG("the filler died");
		/* 4 MiB per 125 ms: 32 MiB/s */
		while (umm_next_event(fd, &ev, 125) == 1) {
			uint64_t give;

			if (ev.type != UMM_EVENT_PRESSURE)
				continue;
			events++;
			EXPECT_EQ(UMM_TIER_CGROUP, ev.tier_type);
			EXPECT_EQ((uint32_t)id, ev.tier_id);
			EXPECT_EQ(UMM_NODE_NONE, ev.dest_node);
			/*
			 * Sent at LOW or worse; a level may go down between
			 * two (what was given back raised the room; without
			 * UMM_FEATURE_RELIEF the drop itself is not sent).
			 */
			EXPECT_GE(ev.level, UMM_LEVEL_LOW);
			if (ev.level > max_level)
				max_level = ev.level;
			if (ev.eta_ms != UMM_ETA_UNKNOWN && ev.eta_ms)
				with_eta++;
			if (!t_first) {
				t_first = now_ns();
				first_free = ev.bytes_free;
			}
			printf("# %.2f s: PRESSURE %s, room %llu MiB, asks %llu MiB, eta %d ms, filler at %llu MiB\n",
			       (now_ns() - t0) / 1e9, level_name(ev.level),
			       (unsigned long long)(ev.bytes_free / MiB),
			       (unsigned long long)(ev.bytes_to_free / MiB),
			       ev.eta_ms == UMM_ETA_UNKNOWN ? -1 :
			       (int)ev.eta_ms,
			       (unsigned long long)(f.bytes / MiB));
			give = (ev.bytes_to_free + MiB - 1) & ~(MiB - 1);
			if (give > held)
				give = held;
			if (!give)
				continue;
			EXPECT_EQ(UMM_EVENT_F_ACK, ev.flags);
			held -= give;
			munmap(mem + held, give);
			EXPECT_EQ(0, umm_ack(fd, ev.seq, give, NULL));
			EXPECT_EQ(0, umm_report_one(fd, UMM_TIER_HOST_NODE, 0,
						    held, held));
		}
	}
	EXPECT_LE(1, events) TH_LOG("no PRESSURE for the cgroup");
	EXPECT_LE(1, with_eta) TH_LOG("no time-to-critical while filling");
	EXPECT_EQ(0, waitpid(f.pid, &status, WNOHANG))
		TH_LOG("the filler is gone");
	EXPECT_EQ(ooms0, cg_read_key("t1", "memory.events", "oom_kill"))
		TH_LOG("the cgroup OOM-killed");
	printf("# lead: first event with %llu MiB of room, %.0f ms before the limit at 32 MiB/s; %d events, client gave back %llu MiB\n",
	       (unsigned long long)(first_free / MiB),
	       first_free * 1000.0 / (32 * MiB), events,
	       (unsigned long long)((held0 - held) / MiB));
	EXPECT_LT(8 * MiB, first_free) TH_LOG("warned too late");
	hog_stop(&f);
	munmap(mem, held);
	close(fd);
	cg_enter("");
	EXPECT_EQ(0, cg_rm("t1"));
	EXPECT_TRUE(watched_settles(0));
}

TEST_F(cg, sibling_hears_nothing)
{
	int a, b, got_a = 0, got_b = 0;
	uint64_t ida, idb;
	struct umm_event ev;
	pid_t pa, pb;
	struct hog f;

	ASSERT_EQ(0, cg_make("par", NULL));
	ASSERT_EQ(0, cg_write("par", "cgroup.subtree_control", "+memory"));
	ASSERT_EQ(0, cg_make("par/a", "134217728"));
	ASSERT_EQ(0, cg_make("par/b", "134217728"));
	ida = cg_id("par/a");
	idb = cg_id("par/b");
	a = client_in("par/a", "in-a", UMM_FEATURE_CGROUP |
		      UMM_FEATURE_ALL_PRESSURE, 0, &pa);
	b = client_in("par/b", "in-b", UMM_FEATURE_CGROUP |
		      UMM_FEATURE_ALL_PRESSURE, 0, &pb);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	EXPECT_EQ(1, query_cgroup(a, ida, NULL));
	EXPECT_EQ(0, query_cgroup(a, idb, NULL))
		TH_LOG("QUERY lists the sibling's cgroup to a");
	EXPECT_EQ(0, query_cgroup(b, ida, NULL))
		TH_LOG("QUERY lists the sibling's cgroup to b");
	ASSERT_EQ(0, filler_start(&f, "par/a"));
	/* to 112 of 128 MiB: LOW (room under 20 %) */
	while (f.bytes < 112 * MiB)
		ASSERT_EQ(0, hog_step(&f, 8 * MiB));
	usleep(400000);
	while (umm_next_event(a, &ev, 0) == 1)
		got_a += ev.type == UMM_EVENT_PRESSURE &&
			 ev.tier_type == UMM_TIER_CGROUP &&
			 ev.tier_id == (uint32_t)ida;
	while (umm_next_event(b, &ev, 0) == 1)
		got_b += ev.tier_type == UMM_TIER_CGROUP;
	hog_stop(&f);
	EXPECT_LE(1, got_a) TH_LOG("the client in a hears of a");
	EXPECT_EQ(0, got_b) TH_LOG("the client in b hears nothing");
	client_end(a, pa);
	client_end(b, pb);
	EXPECT_EQ(0, cg_rm("par/a"));
	EXPECT_EQ(0, cg_rm("par/b"));
	EXPECT_EQ(0, cg_rm("par"));
	EXPECT_TRUE(watched_settles(0));
}

/*
 * Cgroup events carry the whole 64-bit id to a client that asked for
 * UMM_FEATURE_CGROUP_ID64 (the high half where dest_node would be); a
 * client that did not reads UMM_NODE_NONE there, as before.
 */
TEST_F(cg, cgroup_ids_in_events_are_64_bit)
{
	int a, b, got_a = 0, got_b = 0;
	struct umm_event ev;
	uint64_t id;
	pid_t pa, pb;
	struct hog f;

	ASSERT_EQ(0, cg_make("id64", "134217728"));
	id = cg_id("id64");
	a = client_in("id64", "id64", UMM_FEATURE_CGROUP |
		      UMM_FEATURE_CGROUP_ID64 | UMM_FEATURE_ALL_PRESSURE, 0,
		      &pa);
	b = client_in("id64", "id32", UMM_FEATURE_CGROUP |
		      UMM_FEATURE_ALL_PRESSURE, 0, &pb);
	ASSERT_LE(0, a) TH_LOG("the handshake refused the feature");
	ASSERT_LE(0, b);
	ASSERT_EQ(0, filler_start(&f, "id64"));
	/* to 112 of 128 MiB: LOW (room under 20 %) */
	while (f.bytes < 112 * MiB)
		ASSERT_EQ(0, hog_step(&f, 8 * MiB));
	usleep(400000);
	while (umm_next_event(a, &ev, 0) == 1) {
		if (ev.type != UMM_EVENT_PRESSURE ||
		    ev.tier_type != UMM_TIER_CGROUP)
			continue;
		got_a++;
		EXPECT_EQ(id, ev.tier_id | (uint64_t)ev.tier_id_hi << 32);
	}
	while (umm_next_event(b, &ev, 0) == 1) {
		if (ev.type != UMM_EVENT_PRESSURE ||
		    ev.tier_type != UMM_TIER_CGROUP)
			continue;
		got_b++;
		EXPECT_EQ((uint32_t)id, ev.tier_id);
		EXPECT_EQ(UMM_NODE_NONE, ev.dest_node);
	}
	hog_stop(&f);
	EXPECT_LE(1, got_a);
	EXPECT_LE(1, got_b);
	client_end(a, pa);
	client_end(b, pb);
	EXPECT_EQ(0, cg_rm("id64"));
	EXPECT_TRUE(watched_settles(0));
}

/*
 * A kill by the cgroup's own limit calls no OOM notifier: the clients in
 * that cgroup hear of it all the same (OOM about the cgroup, asking for
 * nothing), the sibling's client and a client without cgroup events do
 * not.
 */
TEST_F(cg, cgroup_oom_kill_is_told)
{
	int a, b, node, status, got_b = 0, got_node = 0;
	uint64_t ida, kills;
	struct umm_event ev;
	pid_t pa, pb;
	struct hog f;

	printf("# expect-dmesg: Memory cgroup out of memory|oom\n");
	printf("# require-dmesg: Memory cgroup out of memory\n");
	fflush(stdout);
	ASSERT_EQ(0, cg_make("par", NULL));
	ASSERT_EQ(0, cg_write("par", "cgroup.subtree_control", "+memory"));
	ASSERT_EQ(0, cg_make("par/a", "67108864"));
	ASSERT_EQ(0, cg_make("par/b", "67108864"));
	ida = cg_id("par/a");
	a = client_in("par/a", "in-a", UMM_FEATURE_CGROUP, 0, &pa);
	b = client_in("par/b", "in-b", UMM_FEATURE_CGROUP, 0, &pb);
	node = umm_client("node-only", 0, UMM_FEATURE_ALL_PRESSURE, 0);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_LE(0, node);
	kills = cg_read_key("par/a", "memory.events", "oom_kill");
	ASSERT_EQ(0, filler_start(&f, "par/a"));
	ASSERT_EQ(0, hog_run_free(&f, 8 * MiB));
	ASSERT_EQ(f.pid, waitpid(f.pid, &status, 0));
	f.pid = 0;
	close(f.go);
	close(f.done);
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	EXPECT_EQ(kills + 1, cg_read_key("par/a", "memory.events",
					 "oom_kill"));
	ASSERT_EQ(1, umm_wait_tier(a, UMM_EVENT_OOM, UMM_TIER_CGROUP,
				   (uint32_t)ida, &ev, 10000))
		TH_LOG("the cgroup's OOM kill was not told");
	EXPECT_EQ(0, ev.bytes_to_free);
	EXPECT_EQ(0, ev.flags) TH_LOG("information: no ACK asked");
	EXPECT_EQ(UMM_NODE_NONE, ev.dest_node);
	usleep(300000);
	while (umm_next_event(a, &ev, 0) == 1)
		EXPECT_NE(UMM_EVENT_OOM, ev.type) TH_LOG("one kill, one event");
	while (umm_next_event(b, &ev, 0) == 1)
		got_b += ev.type == UMM_EVENT_OOM;
	while (umm_next_event(node, &ev, 0) == 1)
		got_node += ev.type == UMM_EVENT_OOM;
	EXPECT_EQ(0, got_b) TH_LOG("the sibling's client hears nothing");
	EXPECT_EQ(0, got_node) TH_LOG("not a system-wide OOM");
	close(node);
	client_end(a, pa);
	client_end(b, pb);
	EXPECT_EQ(0, cg_rm("par/a"));
	EXPECT_EQ(0, cg_rm("par/b"));
	EXPECT_EQ(0, cg_rm("par"));
	EXPECT_TRUE(watched_settles(0));
}

/*
 * The limit is on the parent; the client's own cgroup has none and the
 * filler is in a sibling: the room is the parent's.
 */
TEST_F(cg, parent_limit_counts)
{
	uint64_t id;
	struct umm_level_info li;
	struct umm_event ev;
	int a, got = 0;
	pid_t pa;
	struct hog f;

	ASSERT_EQ(0, cg_make("lim", "167772160"));	/* 160 MiB */
	ASSERT_EQ(0, cg_write("lim", "cgroup.subtree_control", "+memory"));
	ASSERT_EQ(0, cg_make("lim/c", NULL));
	ASSERT_EQ(0, cg_make("lim/d", NULL));
	id = cg_id("lim/c");
	a = client_in("lim/c", "child", UMM_FEATURE_CGROUP, 0, &pa);
	ASSERT_LE(0, a);
	ASSERT_EQ(0, umm_report_one(a, UMM_TIER_HOST_NODE, 0, 64 * MiB,
				    64 * MiB));
	ASSERT_EQ(1, query_cgroup(a, id, &li));
	EXPECT_EQ(160 * MiB, li.total_bytes) TH_LOG("the parent's limit");
	ASSERT_EQ(0, filler_start(&f, "lim/d"));
	while (!got && f.bytes < 152 * MiB) {
		ASSERT_EQ(0, hog_step(&f, 8 * MiB));
		while (umm_next_event(a, &ev, 150) == 1)
			if (ev.type == UMM_EVENT_PRESSURE) {
				EXPECT_EQ(UMM_TIER_CGROUP, ev.tier_type);
				EXPECT_EQ((uint32_t)id, ev.tier_id);
				EXPECT_GE(32 * MiB, ev.bytes_free);
				EXPECT_LT(0, ev.bytes_to_free);
				got = 1;
			}
	}
	printf("# parent limit: PRESSURE with the sibling filler at %llu of 160 MiB\n",
	       (unsigned long long)(f.bytes / MiB));
	hog_stop(&f);
	EXPECT_EQ(1, got);
	client_end(a, pa);
	EXPECT_EQ(0, cg_rm("lim/c"));
	EXPECT_EQ(0, cg_rm("lim/d"));
	EXPECT_EQ(0, cg_rm("lim"));
}

TEST_F(cg, memory_high_below_max)
{
	struct umm_level_info li;
	struct umm_event ev;
	uint64_t id;
	int a, got = 0;
	pid_t pa;
	struct hog f;

	ASSERT_EQ(0, cg_make("hi", "268435456"));	/* max 256 MiB */
	ASSERT_EQ(0, cg_write("hi", "memory.high", "134217728"));
	id = cg_id("hi");
	a = client_in("hi", "high", UMM_FEATURE_CGROUP, 0, &pa);
	ASSERT_LE(0, a);
	ASSERT_EQ(0, umm_report_one(a, UMM_TIER_HOST_NODE, 0, 64 * MiB,
				    64 * MiB));
	ASSERT_EQ(1, query_cgroup(a, id, &li));
	EXPECT_EQ(128 * MiB, li.total_bytes) TH_LOG("memory.high is lower");
	ASSERT_EQ(0, filler_start(&f, "hi"));
	while (!got && f.bytes < 120 * MiB) {
		ASSERT_EQ(0, hog_step(&f, 8 * MiB));
		while (umm_next_event(a, &ev, 150) == 1)
			if (ev.type == UMM_EVENT_PRESSURE &&
			    ev.tier_type == UMM_TIER_CGROUP) {
				EXPECT_GE(128 * MiB * 2 / 10, ev.bytes_free);
				got = 1;
			}
	}
	printf("# memory.high: PRESSURE at %llu MiB filled, high 128, max 256 MiB\n",
	       (unsigned long long)(f.bytes / MiB));
	hog_stop(&f);
	EXPECT_EQ(1, got) TH_LOG("no event below memory.high");
	client_end(a, pa);
	EXPECT_EQ(0, cg_rm("hi"));
}

TEST_F(cg, knobs_refuse_bad_values)
{
	static const char *const files[] = { "cgroup/low_bp",
		"cgroup/medium_bp", "cgroup/critical_bp" };
	static const char *const bad[] = { "abc", "-1", "10001", "1.5",
		"4294967296", "" };
	uint64_t old[3], v;

	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, attr_read_u64(files[i], &old[i]));
	EXPECT_EQ(2000, old[0]);
	EXPECT_EQ(1000, old[1]);
	EXPECT_EQ(500, old[2]);
	for (int i = 0; i < 3; i++)
		for (size_t j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
			if (!bad[j][0])
				continue;
			EXPECT_EQ(-EINVAL, attr_write(files[i], bad[j]))
				TH_LOG("%s <- %s", files[i], bad[j]);
		}
	/* out of order */
	EXPECT_EQ(-EINVAL, attr_write("cgroup/low_bp", "1000"));
	EXPECT_EQ(-EINVAL, attr_write("cgroup/medium_bp", "2000"));
	EXPECT_EQ(-EINVAL, attr_write("cgroup/critical_bp", "1000"));
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, attr_read_u64(files[i], &v));
		EXPECT_EQ(old[i], v) TH_LOG("%s changed", files[i]);
	}
	/* valid ones, in an order that keeps them ordered, and back */
	EXPECT_EQ(0, attr_write("cgroup/low_bp", "10000"));
	EXPECT_EQ(0, attr_write("cgroup/medium_bp", "0x1388"));
	EXPECT_EQ(0, attr_write("cgroup/critical_bp", "0"));
	ASSERT_EQ(0, attr_read_u64("cgroup/medium_bp", &v));
	EXPECT_EQ(5000, v);
	EXPECT_EQ(0, attr_write("cgroup/critical_bp", "500"));
	EXPECT_EQ(0, attr_write("cgroup/medium_bp", "1000"));
	EXPECT_EQ(0, attr_write("cgroup/low_bp", "2000"));
	EXPECT_EQ(0400, attr_mode("cgroup/watched"));
	EXPECT_NE(0, attr_write("cgroup/watched", "1"));
}

/*
 * The process moves: the client follows it at the next QUERY (and
 * sample); the cgroup it left is no longer watched and can go.
 */
TEST_F(cg, client_follows_its_process)
{
	uint64_t ida, idb;
	int a, plain;
	pid_t pa;

	ASSERT_EQ(0, cg_make("mv-a", "1073741824"));
	ASSERT_EQ(0, cg_make("mv-b", "536870912"));
	ida = cg_id("mv-a");
	idb = cg_id("mv-b");
	a = client_in("mv-a", "mover", UMM_FEATURE_CGROUP, 0, &pa);
	ASSERT_LE(0, a);
	plain = umm_client("plain", 0, 0, 0);
	ASSERT_LE(0, plain);
	EXPECT_EQ(1, query_cgroup(a, ida, NULL));
	EXPECT_EQ(0, query_cgroups(plain))
		TH_LOG("no cgroups for a client that did not ask");
	EXPECT_EQ(1, watched());
	ASSERT_EQ(0, client_move(a, "mv-b"));
	EXPECT_EQ(0, query_cgroup(a, ida, NULL));
	EXPECT_EQ(1, query_cgroup(a, idb, NULL)) TH_LOG("followed to b");
	EXPECT_EQ(1, watched());
	EXPECT_EQ(0, debugfs_lists(ida));
	EXPECT_EQ(1, debugfs_lists(idb));
	EXPECT_EQ(0, cg_rm("mv-a"));
	/* to the root: no limit there, nothing watched */
	ASSERT_EQ(0, client_move(a, ""));
	EXPECT_EQ(0, query_cgroups(a));
	EXPECT_EQ(0, watched());
	client_end(a, pa);
	close(plain);
	EXPECT_EQ(0, cg_rm("mv-b"));
}

/*
 * The cgroup goes while the client is open: after its process moved
 * away, or after the process that opened the file exited and passed it
 * on (the cgroup then goes offline under the client, which is let go to
 * the nearest online ancestor, here the root: none).
 */
TEST_F(cg, cgroup_removed_while_open)
{
	uint64_t id, idp;
	int a, b;
	pid_t pa, pb;

	ASSERT_EQ(0, cg_make("rm-x", NULL));
	ASSERT_EQ(0, cg_make("rm-y", NULL));
	id = cg_id("rm-x");
	a = client_in("rm-x", "goner", UMM_FEATURE_CGROUP, 0, &pa);
	ASSERT_LE(0, a);
	EXPECT_EQ(1, query_cgroup(a, id, NULL));
	ASSERT_EQ(0, client_move(a, "rm-y"));
	EXPECT_EQ(0, cg_rm("rm-x")) TH_LOG("rmdir while a client is open");
	EXPECT_EQ(0, query_cgroup(a, id, NULL));
	EXPECT_EQ(1, query_cgroup(a, cg_id("rm-y"), NULL));

	/* the opener exits; its file lives on here */
	ASSERT_EQ(0, cg_make("rm-p", NULL));
	ASSERT_EQ(0, cg_write("rm-p", "cgroup.subtree_control", "+memory"));
	ASSERT_EQ(0, cg_make("rm-p/z", NULL));
	idp = cg_id("rm-p");
	id = cg_id("rm-p/z");
	b = client_in("rm-p/z", "orphan", UMM_FEATURE_CGROUP, 1, &pb);
	ASSERT_LE(0, b);
	EXPECT_EQ(1, query_cgroup(b, id, NULL))
		TH_LOG("tied while its cgroup is online");
	EXPECT_EQ(0, cg_rm("rm-p/z"));
	/* offline now: handed to rm-p, where its charges went */
	EXPECT_EQ(0, query_cgroup(b, id, NULL));
	EXPECT_EQ(1, query_cgroup(b, idp, NULL));
	EXPECT_EQ(0, cg_rm("rm-p"));
	EXPECT_EQ(0, query_cgroup(b, idp, NULL));
	EXPECT_EQ(1, query_cgroups(b)) TH_LOG("only rm-y is left");
	close(b);
	client_end(a, pa);
	EXPECT_EQ(0, cg_rm("rm-y"));
	EXPECT_TRUE(watched_settles(0));
	EXPECT_EQ(0, debugfs_lists(id));
}

/*
 * One worker of thousands_of_clients_open_and_close, in @cg: @rounds
 * clients opened, @open_max kept open at once (the oldest closed first),
 * every 25th checked tied to the cgroup by its QUERY. Exit status: 0, or
 * what went wrong.
 */
static int churn_clients(const char *cg, uint64_t id, int rounds,
			 int open_max)
{
	int fd[64], bad = 0;

	if (cg_enter(cg))
		return 20;
	for (int i = 0; i < open_max; i++)
		fd[i] = -1;
	for (int i = 0; i < rounds; i++) {
		int s = i % open_max;

		if (fd[s] >= 0)
			close(fd[s]);
		fd[s] = umm_client("churn", i % 7, UMM_FEATURE_CGROUP, 0);
		if (fd[s] < 0)
			return 21;
		if (i % 25 == 0 && query_cgroup(fd[s], id, NULL) != 1)
			bad++;
	}
	for (int i = 0; i < open_max; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	return bad ? 22 : 0;
}

/*
 * A launcher spawning and reaping ranks: 4 processes in one cgroup open
 * and close 1,000 clients each, up to 32 open at once each. Every client
 * is tied to the cgroup, and once they are all closed the cgroup is let
 * go (not watched, not listed) and can be removed.
 */
TEST_F(cg, thousands_of_clients_open_and_close)
{
	enum { WORKERS = 4, ROUNDS = 1000, OPEN_MAX = 32 };
	pid_t pid[WORKERS];
	uint64_t id;
	int st;

	ASSERT_EQ(0, cg_make("many", "1073741824"));
	id = cg_id("many");
	for (int w = 0; w < WORKERS; w++) {
		pid[w] = fork();
		ASSERT_LE(0, pid[w]);
		if (pid[w] == 0)
			_exit(churn_clients("many", id, ROUNDS, OPEN_MAX));
	}
	for (int w = 0; w < WORKERS; w++) {
		ASSERT_EQ(pid[w], waitpid(pid[w], &st, 0));
		EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
			TH_LOG("worker %d: status 0x%x", w, st);
	}
	EXPECT_TRUE(watched_settles(0));
	EXPECT_EQ(0, debugfs_lists(id));
	EXPECT_EQ(0, cg_rm("many"));
}

/*
 * A fill as fast as the VM faults pages in (350 - 400 MB/s) crosses the
 * band between the critical threshold and the limit (5 % of 192 MiB) in
 * about 25 ms, under interval_ms: CRITICAL must come before the OOM kill.
 */
TEST_F(cg, fast_cgroup_fill_gets_critical_first)
{
	int rounds = 4, critical = 0, starved = 0;
	uint64_t id;

	printf("# expect-dmesg: Memory cgroup out of memory|oom\n");
	fflush(stdout);
	ASSERT_EQ(0, cg_make("fast", "201326592"));
	id = cg_id("fast");
	for (int r = 0; r < rounds; r++) {
		uint64_t t0, t_end, t_crit = 0, kills;
		uint32_t max_level = UMM_LEVEL_NORMAL;
		struct sample_stats st;
		struct umm_event ev;
		int a, status, late;
		unsigned int min_next = ~0u;
		pid_t pa;
		struct hog f;

		a = client_in("fast", "watcher", UMM_FEATURE_CGROUP |
			      UMM_FEATURE_ALL_PRESSURE, 0, &pa);
		ASSERT_LE(0, a);
		kills = cg_read_key("fast", "memory.events", "oom_kill");
		ASSERT_EQ(0, sample_stats(&st));
		ASSERT_EQ(0, filler_start(&f, "fast"));
		t0 = now_ns();
		ASSERT_EQ(0, hog_run_free(&f, 8 * MiB));
		/* the sampler comes sooner as the room runs out */
		while (waitpid(f.pid, &status, WNOHANG) == 0) {
			struct sample_stats now;

			if (!sample_stats(&now) && now.next_ms < min_next)
				min_next = now.next_ms;
			usleep(2000);
		}
		t_end = now_ns();
		f.pid = 0;
		close(f.go);
		close(f.done);
		while (umm_next_event(a, &ev, 0) == 1) {
			if (ev.type != UMM_EVENT_PRESSURE ||
			    ev.tier_id != (uint32_t)id)
				continue;
			if (ev.level > max_level)
				max_level = ev.level;
			if (ev.level == UMM_LEVEL_CRITICAL && !t_crit)
				t_crit = ev.ts_ns;
		}
		EXPECT_TRUE(WIFSIGNALED(status));
		EXPECT_EQ(kills + 1, cg_read_key("fast", "memory.events",
						 "oom_kill"));
		late = late_since(&st);
		printf("# round %d: filled 192 MiB in %.0f ms (%.0f MB/s), highest level %s, CRITICAL %.0f ms before the kill was seen, %d samples late, shortest interval %u ms\n",
		       r, (t_end - t0) / 1e6, 192 * MiB / 1e6 /
		       ((t_end - t0) / 1e9), level_name(max_level),
		       t_crit ? (t_end - t_crit) / 1e6 : -1.0, late, min_next);
		EXPECT_GE(20u, min_next) TH_LOG("no faster sampling near the limit");
		critical += max_level == UMM_LEVEL_CRITICAL;
		starved += max_level != UMM_LEVEL_CRITICAL && late;
		client_end(a, pa);
	}
	EXPECT_EQ(rounds, critical + starved)
		TH_LOG("CRITICAL in every fast fill the sampler ran in time");
	EXPECT_LE(1, critical);
	EXPECT_EQ(0, cg_rm("fast"));
}

/* The same for a node (no cgroup): bound to node 0, as fast as it goes. */
TEST_F(cg, fast_node_fill_gets_critical_first)
{
	int rounds = 3, critical = 0, starved = 0;

	printf("# expect-dmesg: Out of memory\n");
	fflush(stdout);
	for (int r = 0; r < rounds; r++) {
		uint64_t t0, t_end, t_crit = 0;
		uint32_t max_level = UMM_LEVEL_NORMAL;
		struct sample_stats st;
		struct umm_event ev;
		int a, status, late;
		struct hog h;

		a = umm_client("node-watcher", 0, UMM_FEATURE_ALL_PRESSURE, 0);
		ASSERT_LE(0, a);
		ASSERT_EQ(0, umm_report_one(a, UMM_TIER_HOST_NODE, 0,
					    16 * MiB, 16 * MiB));
		/* let the node settle back after the last round's kill */
		usleep(500000);
		umm_drain(a);
		ASSERT_EQ(0, sample_stats(&st));
		ASSERT_EQ(0, hog_start(&h, 0, 1000));
		t0 = now_ns();
		ASSERT_EQ(0, hog_run_free(&h, 8 * MiB));
		waitpid(h.pid, &status, 0);
		t_end = now_ns();
		h.pid = 0;
		close(h.go);
		close(h.done);
		while (umm_next_event(a, &ev, 0) == 1) {
			if (ev.type != UMM_EVENT_PRESSURE ||
			    ev.tier_type != UMM_TIER_HOST_NODE ||
			    ev.tier_id != 0)
				continue;
			if (ev.level > max_level)
				max_level = ev.level;
			if (ev.level == UMM_LEVEL_CRITICAL && !t_crit)
				t_crit = ev.ts_ns;
		}
		EXPECT_TRUE(WIFSIGNALED(status));
		late = late_since(&st);
		printf("# node round %d: %.0f ms to the kill, highest level %s, CRITICAL %.0f ms before it was seen, %d samples late\n",
		       r, (t_end - t0) / 1e6, level_name(max_level),
		       t_crit ? (t_end - t_crit) / 1e6 : -1.0, late);
		critical += max_level == UMM_LEVEL_CRITICAL;
		starved += max_level != UMM_LEVEL_CRITICAL && late;
		close(a);
	}
	EXPECT_EQ(rounds, critical + starved)
		TH_LOG("CRITICAL in every fast fill the sampler ran in time");
	EXPECT_LE(1, critical);
}

/*
 * A process in @cg holding @n clients with cgroup events, each declaring
 * @recl reclaimable on node 0, until @hold's write end closes. Returns its
 * pid after the clients are ready, or -errno.
 */
static pid_t clients_in(const char *cg, int n, uint64_t recl, int hold[2])
{
	int ready[2];
	pid_t pid;
	char c;

	if (pipe(ready))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		close(hold[1]);
		close(ready[0]);
		if (cg_enter(cg))
			_exit(20);
		for (int i = 0; i < n; i++) {
			int fd = umm_client("many", 0, UMM_FEATURE_CGROUP, 0);

			if (fd < 0 || umm_report_one(fd, UMM_TIER_HOST_NODE, 0,
						     recl, recl))
				_exit(21);
		}
		if (write(ready[1], "r", 1) != 1)
			_exit(22);
		while (read(hold[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1)
		pid = -EIO;
	close(ready[0]);
	return pid;
}

/*
 * QUERY with 100 watched cgroups of 10 clients each (1000 clients): what
 * one costs, asked by a client in the root cgroup (which sees every
 * cgroup with CAP_SYS_ADMIN), and that each cgroup's reclaimable_bytes is
 * the sum of what its clients declared (kept per cgroup as they report).
 */
TEST_F(cg, query_cost_100_cgroups_1000_clients)
{
	enum { N = 100, PER = 10, ROUNDS = 2000 };
	static struct umm_level_info lv[N + 64];
	static pid_t pids[N];
	uint64_t t0, ns, ids[N];
	int hold[2], fd, n, found = 0;
	char name[32];

	ASSERT_EQ(0, pipe(hold));
	ASSERT_EQ(0, cg_make("qc", NULL));
	ASSERT_EQ(0, cg_write("qc", "cgroup.subtree_control", "+memory"));
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "qc/q%d", i);
		ASSERT_EQ(0, cg_make(name, "1073741824"));
		ids[i] = cg_id(name);
		pids[i] = clients_in(name, PER, (uint64_t)(i + 1) * MiB, hold);
		ASSERT_LT(0, pids[i]);
	}
	close(hold[0]);
	fd = umm_client("query", 0, UMM_FEATURE_CGROUP, 0);
	ASSERT_LE(0, fd);
	n = umm_query(fd, lv, N + 64, NULL);
	ASSERT_LE(N, n);
	for (int i = 0; i < n && i < N + 64; i++) {
		uint64_t id = lv[i].tier_id |
			      (uint64_t)lv[i].tier_id_hi << 32;

		if (lv[i].tier_type != UMM_TIER_CGROUP)
			continue;
		for (int j = 0; j < N; j++) {
			if (id != ids[j])
				continue;
			found++;
			EXPECT_EQ((uint64_t)PER * (j + 1) * MiB,
				  lv[i].reclaimable_bytes);
		}
	}
	EXPECT_EQ(N, found);
	t0 = now_ns();
	for (int r = 0; r < ROUNDS; r++)
		ASSERT_EQ(n, umm_query(fd, lv, N + 64, NULL));
	ns = (now_ns() - t0) / ROUNDS;
	printf("# QUERY with %d cgroups x %d clients: %.1f us each\n", N,
	       N * PER, ns / 1e3);
	close(fd);
	close(hold[1]);
	for (int i = 0; i < N; i++)
		waitpid(pids[i], NULL, 0);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "qc/q%d", i);
		EXPECT_EQ(0, cg_rm(name));
	}
	EXPECT_EQ(0, cg_rm("qc"));
	EXPECT_TRUE(watched_settles(0));
}

/*
 * What a sample costs: the sampling work's own time (debugfs sample)
 * over 2 s, with no cgroup watched and then with 100, each with a limit
 * and a client in it.
 */
TEST_F(cg, sample_cost_with_100_cgroups)
{
	enum { N = 100 };
	struct sample_stats s0, s1, s2, s3;
	static int fds[N];
	static pid_t pids[N];
	double idle, busy;
	char name[32];
	int ok = 0;

	ASSERT_EQ(0, sample_stats(&s0));
	usleep(2000000);
	ASSERT_EQ(0, sample_stats(&s1));
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "many%d", i);
		ASSERT_EQ(0, cg_make(name, "1073741824"));
		fds[i] = client_in(name, "many", UMM_FEATURE_CGROUP, 0,
				   &pids[i]);
		ok += fds[i] >= 0;
	}
	EXPECT_EQ(N, ok);
	EXPECT_EQ(N, watched());
	usleep(500000);
	ASSERT_EQ(0, sample_stats(&s2));
	usleep(2000000);
	ASSERT_EQ(0, sample_stats(&s3));
	EXPECT_EQ(N, s3.cgroups);
	/* with no client there may be no sample at all */
	idle = s1.samples > s0.samples ? (double)(s1.ns_sum - s0.ns_sum) /
					 (s1.samples - s0.samples) : 0;
	busy = (double)(s3.ns_sum - s2.ns_sum) / (s3.samples - s2.samples);
	printf("# sample cost: %.1f us with 0 cgroups (%llu samples in 2 s), %.1f us with %d (%llu samples in 2 s, next in %u ms)\n",
	       idle / 1000, s1.samples - s0.samples, busy / 1000, N,
	       s3.samples - s2.samples, s3.next_ms);
	/* idle stays at one sample per interval_ms (100) */
	EXPECT_GE(30ull, s3.samples - s2.samples);
	for (int i = 0; i < N; i++) {
		if (fds[i] >= 0)
			client_end(fds[i], pids[i]);
		snprintf(name, sizeof(name), "many%d", i);
		EXPECT_EQ(0, cg_rm(name));
	}
	EXPECT_TRUE(watched_settles(0));
}

/* A child in @cg writes @bytes of clean page cache to @path. */
static int cg_cache_fill(const char *cg, const char *path, uint64_t bytes)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0)
		_exit(cg_enter(cg) ? 30 : cache_fill(path, bytes, -1));
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -ECHILD;
}

/* PRESSURE records queued on @fd now (read and dropped). */
static int pressure_events(int fd)
{
	struct umm_event ev;
	int n = 0;

	while (umm_next_event(fd, &ev, 0) == 1)
		n += ev.type == UMM_EVENT_PRESSURE;
	return n;
}

/*
 * memory.max 128 MiB and 320 MiB of file writes in it: memory.current sits
 * at the limit, all of it clean page cache that reclaim takes back at
 * once. The client in it hears nothing; its level stays NORMAL.
 */
TEST_F(cg, page_cache_reads_normal)
{
	const uint64_t limit = 128 * MiB;
	uint64_t id, cur;
	struct umm_level_info li;
	int fd, events;
	pid_t pid;

	if (!getenv("UM_VM_DISK"))
		SKIP(return, "no disk for page cache (runs in the VM rig)");
	ASSERT_EQ(0, cg_make("pc", "134217728"));
	id = cg_id("pc");
	fd = client_in("pc", "pc", UMM_FEATURE_CGROUP, 0, &pid);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, umm_report_one(fd, UMM_TIER_HOST_NODE, 0, 16 * MiB, 0));
	ASSERT_EQ(0, cg_cache_fill("pc", "/mnt/pc-cache", 320 * MiB));
	usleep(300000);	/* samples of the full cgroup */
	cur = cg_read_key("pc", "memory.stat", "file");
	events = pressure_events(fd);
	ASSERT_EQ(1, query_cgroup(fd, id, &li));
	printf("# cgroup at %llu MiB of %llu: %llu MiB page cache (%llu inactive), level %s, %d PRESSURE\n",
	       (unsigned long long)(li.used_bytes / MiB),
	       (unsigned long long)(limit / MiB),
	       (unsigned long long)(cur / MiB),
	       (unsigned long long)(cg_read_key("pc", "memory.stat",
						"inactive_file") / MiB),
	       level_name(li.level), events);
	EXPECT_LT(limit * 8 / 10, li.used_bytes)
		TH_LOG("the cache did not fill the cgroup");
	EXPECT_EQ(0, events) TH_LOG("warned of memory the cache lends");
	EXPECT_EQ(UMM_LEVEL_NORMAL, li.level);
	client_end(fd, pid);
	unlink("/mnt/pc-cache");
	EXPECT_EQ(0, cg_rm("pc"));
}

/*
 * memory.max 192 MiB: 160 MiB of clean page cache, then a filler's
 * anonymous memory in 4 MiB steps. The cache raises nothing; the first
 * PRESSURE comes once the anonymous part nears the low threshold (80 % of
 * the limit), within 24 MiB (the client, page tables, slab, active file).
 */
TEST_F(cg, mixed_fill_warned_by_its_anon_part)
{
	const uint64_t limit = 192 * MiB, at = limit * 8 / 10 - 24 * MiB;
	int fd, cache_events, first = 0;
	struct umm_event ev;
	struct hog f;
	pid_t pid;

	if (!getenv("UM_VM_DISK"))
		SKIP(return, "no disk for page cache (runs in the VM rig)");
	ASSERT_EQ(0, cg_make("mx", "201326592"));
	fd = client_in("mx", "mx", UMM_FEATURE_CGROUP, 0, &pid);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, umm_report_one(fd, UMM_TIER_HOST_NODE, 0, 16 * MiB, 0));
	ASSERT_EQ(0, cg_cache_fill("mx", "/mnt/mx-cache", 160 * MiB));
	usleep(300000);
	cache_events = pressure_events(fd);
	ASSERT_EQ(0, filler_start(&f, "mx"));
	while (!first && f.bytes < limit - 16 * MiB) {
		ASSERT_EQ(0, hog_step(&f, 4 * MiB)) TH_LOG("the filler died");
		while (umm_next_event(fd, &ev, 150) == 1)
			first |= ev.type == UMM_EVENT_PRESSURE &&
				 ev.tier_type == UMM_TIER_CGROUP;
	}
	printf("# PRESSURE during 160 MiB of cache: %d; first PRESSURE at %llu MiB anonymous of %llu (expected from %llu)\n",
	       cache_events, (unsigned long long)(f.bytes / MiB),
	       (unsigned long long)(limit / MiB),
	       (unsigned long long)(at / MiB));
	EXPECT_EQ(0, cache_events) TH_LOG("the page cache was warned");
	EXPECT_TRUE(first) TH_LOG("the anonymous part was never warned");
	EXPECT_LE(at, f.bytes) TH_LOG("warned before the anonymous part reached low");
	hog_stop(&f);
	client_end(fd, pid);
	unlink("/mnt/mx-cache");
	EXPECT_EQ(0, cg_rm("mx"));
}

/* Samples taken over @ms, per second. */
static double samples_per_s(int ms, struct sample_stats *end)
{
	struct sample_stats a;
	uint64_t t0 = now_ns();

	if (sample_stats(&a))
		return -1;
	usleep(ms * 1000);
	if (sample_stats(end))
		return -1;
	return (end->samples - a.samples) * 1e9 / (now_ns() - t0);
}

/*
 * No client: no sample at all. A client starts the sampling at once; a
 * fill of node 0 quickens it and raises the fill-rate estimate, which
 * falls again (below half within 8 s) once the fill is over; the last
 * client gone, sampling stops. Prints samples/s idle, steady and filling.
 */
TEST_F(cg, sampling_follows_clients_and_fills)
{
	struct sample_stats s0, s1, s2, s3;
	double idle, steady, filling, after;
	uint64_t t0, peak;
	struct hog h;
	int fd;

	usleep(300000);	/* the sample after the last close */
	idle = samples_per_s(2000, &s0);
	fd = umm_client("watch", 0, 0, 0);
	ASSERT_LE(0, fd);
	usleep(100000);
	ASSERT_EQ(0, sample_stats(&s1));
	EXPECT_LT(s0.samples, s1.samples) TH_LOG("a client did not wake it");
	steady = samples_per_s(2000, &s1);
	ASSERT_EQ(0, hog_start(&h, 0, 1000));
	t0 = now_ns();
	ASSERT_EQ(0, hog_step(&h, 192 * MiB));
	ASSERT_EQ(0, sample_stats(&s2));
	filling = (s2.samples - s1.samples) * 1e9 / (now_ns() - t0);
	usleep(50000);
	ASSERT_EQ(0, sample_stats(&s2));
	peak = s2.peak;
	hog_stop(&h);
	usleep(8000000);
	after = samples_per_s(1000, &s3);
	close(fd);
	usleep(300000);
	ASSERT_EQ(0, sample_stats(&s0));
	usleep(1000000);
	ASSERT_EQ(0, sample_stats(&s1));
	printf("# samples/s: %.1f idle, %.1f steady with a client, %.1f filling 192 MiB, %.1f after; fill estimate %llu MB/s after the fill, %llu MB/s 8 s later; %llu samples in 1 s after the close\n",
	       idle, steady, filling, after,
	       (unsigned long long)(peak / 1000000),
	       s3.peak / 1000000, s1.samples - s0.samples);
	EXPECT_EQ(0, idle) TH_LOG("samples with no client");
	EXPECT_EQ(s0.samples, s1.samples) TH_LOG("samples after the close");
	EXPECT_LT(0, peak) TH_LOG("the fill was not measured");
	EXPECT_GT(peak / 2, s3.peak) TH_LOG("the fill-rate estimate never falls");
}

TEST_HARNESS_MAIN
