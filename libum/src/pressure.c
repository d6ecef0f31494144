/* SPDX-License-Identifier: MIT */
/*
 * pressure.c - the pressure loop: one thread per context on io_uring.
 *
 * The thread keeps these requests armed on its ring:
 *  - a read of /dev/umm (the module's read_iter honours IOCB_NOWAIT, so
 *    io_uring waits on poll instead of parking a worker thread in read());
 *  - a POLLPRI poll of a PSI trigger, where PSI is the fallback;
 *  - a read of an eventfd, for stop and "books changed" nudges.
 * It wakes at least every report interval to send a REPORT when the
 * context's books changed. Events that ask for bytes are turned into
 * um_shed() toward the suggested destination, waited for, and ACKed.
 *
 * Losing the module (DISABLED, SHUTDOWN, end of file, a read error) only
 * changes the set of sources: the context keeps its regions and budgets,
 * the loop falls back to PSI where the kernel has it, and comes back to the
 * module on ENABLED.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <linux/umm.h>

#include "internal.h"
#include "um_numa.h"
#include "pressure.h"
#include "util.h"

#define EV_BATCH	16
#define TAG_UMM		1
#define TAG_PSI		2
#define TAG_WAKE	3
#define DEF_REPORT_MS	100
#define HOME_CHECK_NS	(1000ull * 1000000ull)	/* steered away: look home */
#define UMM_SYSFS_NODES	"/sys/kernel/mm/umm/nodes"
#define PSI_TRIGGER	"some 150000 2000000"	/* 150 ms stalled in 2 s */
#define PSI_SHED_MIN	(64ull << 20)
#define MAX_GPUS	(UMM_MAX_GPUS < UM_MAX_DEVICES ? UMM_MAX_GPUS : \
			 UM_MAX_DEVICES)

struct books {
	uint64_t host_res[UM_STATS_MAX_NODES];
	uint64_t host_rec[UM_STATS_MAX_NODES];
	uint64_t dev_res[MAX_GPUS];
	uint64_t dev_rec[MAX_GPUS];
};

struct um_pressure {
	struct um_context *ctx;
	pthread_t thread;
	bool started;
	struct io_uring ring;
	int wake_fd;
	uint64_t wake_buf;
	atomic_bool stop;
	atomic_bool dirty;

	/* /dev/umm */
	int umm_fd;
	bool umm_enabled;
	bool umm_read_armed;
	int umm_prio;
	char umm_name[UMM_NAME_LEN];
	uint64_t last_seq;
	struct umm_event evbuf[EV_BATCH];
	struct books sent;
	bool sent_valid;
	uint64_t last_report_ns;
	uint64_t report_ns;

	/* host placement steered away from a node under pressure */
	int home_orig;			/* -1: not steered */
	/*
	 * Nodes at LOW or worse since their last event, and where to put
	 * what we hold there: between events, the loop keeps our released
	 * host copies off them (a trainer's next step would otherwise bring
	 * back, through evictions and restores, what an event just moved).
	 */
	uint32_t hot;			/* bit per node < 32 */
	int hot_dest[32];		/* node the module named, or -1 */
	/*
	 * Free bytes a node had when it was said to be LOW or worse: about
	 * its low mark. Copies steered away come home only when the node's
	 * free memory covers them and stays above it, or they would push it
	 * straight back to LOW (seen in the VM: a RELIEF after every move,
	 * the copies back on the next step, PRESSURE again).
	 */
	uint64_t low_mark[32];
	uint64_t last_home_check_ns;
	uint64_t last_keep_ns;		/* last pass of keep_away(); 0: due */
	bool keep_yields;		/* keep_away() runs: stop for events */
	bool keep_cut;			/* it stopped: go on after them */

	/* PSI */
	int psi_fd;
	const char *psi_path;
	uint64_t last_psi_ns;

	pthread_mutex_t st_lock;
	struct um_pressure_stats st;
	atomic_uint sources;
};

static struct um_pressure *pr_of(struct um_context *ctx)
{
	return ctx ? ctx->pressure : NULL;
}

/* ---- sources ---------------------------------------------------------- */

static void default_name(char *name)
{
	const char *env = getenv("LIBUM_CLIENT_NAME");
	char comm[64] = "";
	size_t i, o = 0;
	FILE *f;

	if (!env) {
		f = fopen("/proc/self/comm", "r");
		if (f) {
			if (!fgets(comm, sizeof(comm), f))
				comm[0] = '\0';
			fclose(f);
		}
		env = comm;
	}
	for (i = 0; env[i] && o < UMM_NAME_LEN - 1; i++)
		if (env[i] >= 0x21 && env[i] <= 0x7e)
			name[o++] = env[i];
	if (!o)
		memcpy(name, "libum", 6);
	else
		name[o] = '\0';
}

static int module_handshake(struct um_pressure *pr, int fd)
{
	struct umm_api api = {
		.size = sizeof(api),
		.api = UMM_API_VERSION,
		.features = UMM_FEATURE_RELIEF | UMM_FEATURE_ALL_PRESSURE,
		.priority = pr->umm_prio,
	};

	memcpy(api.name, pr->umm_name, sizeof(api.name));
	if (!ioctl(fd, UMM_IOC_API, &api))
		return 0;
	if (errno != EINVAL)
		return -errno;
	/* an older module without those features: plain events only */
	api.features = 0;
	if (!ioctl(fd, UMM_IOC_API, &api))
		return 0;
	return -errno;
}

static int module_query_enabled(int fd)
{
	struct umm_query q = { .size = sizeof(q) };

	if (ioctl(fd, UMM_IOC_QUERY, &q))
		return -errno;
	return q.enabled ? 1 : 0;
}

/* Open and greet /dev/umm; *why explains a failure for the log. */
static int module_open(struct um_pressure *pr, char *why, size_t len)
{
	const char *path = getenv("LIBUM_UMM_DEV");
	int fd, ret;

	if (!path)
		path = UMM_DEVICE_PATH;
	fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, len, "no %s: %s", path, strerror(errno));
		return -errno;
	}
	ret = module_handshake(pr, fd);
	if (ret) {
		snprintf(why, len, "%s refused the handshake: %s", path,
			 strerror(-ret));
		close(fd);
		return ret;
	}
	ret = module_query_enabled(fd);
	pr->umm_enabled = ret != 0;	/* a failed query: assume enabled */
	pr->umm_fd = fd;
	pr->last_seq = 0;
	pr->sent_valid = false;
	return 0;
}

static void module_close(struct um_pressure *pr)
{
	if (pr->umm_fd >= 0)
		close(pr->umm_fd);
	pr->umm_fd = -1;
	pr->umm_enabled = false;
}

static int psi_open(struct um_pressure *pr, char *why, size_t len)
{
	int fd;

	fd = open(pr->psi_path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, len, "no %s: %s", pr->psi_path, strerror(errno));
		return -errno;
	}
	if (write(fd, PSI_TRIGGER, sizeof(PSI_TRIGGER)) < 0) {
		int err = errno;

		snprintf(why, len, "%s refused a trigger: %s", pr->psi_path,
			 strerror(err));
		close(fd);
		return -err;
	}
	pr->psi_fd = fd;
	return 0;
}

static void psi_close(struct um_pressure *pr)
{
	if (pr->psi_fd >= 0)
		close(pr->psi_fd);
	pr->psi_fd = -1;
}

static unsigned int current_sources(const struct um_pressure *pr)
{
	unsigned int s = UM_PSRC_BUDGET;

	if (pr->umm_fd >= 0 && pr->umm_enabled)
		s |= UM_PSRC_UMM;
	if (pr->psi_fd >= 0)
		s |= UM_PSRC_PSI;
	return s;
}

static void sources_text(const struct um_pressure *pr, char *buf, size_t len)
{
	unsigned int s = current_sources(pr);

	snprintf(buf, len, "%s%s%s", (s & UM_PSRC_UMM) ? "umm.ko, " : "",
		 (s & UM_PSRC_PSI) ? "PSI trigger, " : "", "own budgets");
}

static void publish_sources(struct um_pressure *pr)
{
	unsigned int s = current_sources(pr);

	atomic_store(&pr->sources, s);
	pthread_mutex_lock(&pr->st_lock);
	pr->st.sources = s;
	pthread_mutex_unlock(&pr->st_lock);
}

/*
 * The module went away or was switched off: fall back to PSI if the kernel
 * has it. Nothing in the context changes; budgets keep being enforced.
 */
static void fall_back(struct um_pressure *pr, const char *what)
{
	char why[160] = "", src[96];

	pr->hot = 0;	/* no more events to say when it is over */
	if (pr->psi_fd < 0)
		psi_open(pr, why, sizeof(why));
	sources_text(pr, src, sizeof(src));
	um__log(pr->ctx, UM_LOG_WARN,
		"pressure: %s; falling back to: %s%s%s", what, src,
		why[0] ? "; " : "", why);
	pthread_mutex_lock(&pr->st_lock);
	pr->st.fallbacks++;
	pthread_mutex_unlock(&pr->st_lock);
	publish_sources(pr);
}

/* ---- books and REPORT --------------------------------------------------- */

/* The node holding r's host copy: its pool heap's, else where its pages are. */
static int node_of(const struct um_context *ctx, const struct um_region *r)
{
	int node = r->host_node;

	if (node < 0)
		node = ctx->home_node;
	if (node < 0) {
		uintptr_t page = (uintptr_t)r->host & ~(uintptr_t)4095;

		node = um__numa_where((const void *)page, 4096, NULL, 0);
	}
	if (node < 0 || node >= UM_STATS_MAX_NODES)
		node = 0;
	return node;
}

/* What the context holds and could give back, per tier, from its regions. */
static int collect(struct um_context *ctx, struct books *b)
{
	struct um_region *r;
	int ret = um__enter(ctx);

	if (ret)
		return ret;
	memset(b, 0, sizeof(*b));
	for (r = ctx->regions.next; r != &ctx->regions; r = r->next) {
		bool idle = !r->acquired && !r->pending;

		if (r->host) {
			int node = node_of(ctx, r);

			b->host_res[node] += r->bytes;
			if (idle && !um__tier_is_dev(r->residency))
				b->host_rec[node] += r->bytes;
		}
		if (r->counted && r->device < MAX_GPUS) {
			b->dev_res[r->device] += r->dev_len;
			if (idle)
				b->dev_rec[r->device] += r->dev_len;
		}
	}
	um__exit(ctx);
	return 0;
}

static int send_report(struct um_pressure *pr, const struct books *b)
{
	struct umm_tier_report t[UM_STATS_MAX_NODES + MAX_GPUS];
	struct umm_report rep = { .size = sizeof(rep) };
	unsigned int n = 0, i;

	for (i = 0; i < UM_STATS_MAX_NODES; i++) {
		if (!b->host_res[i])
			continue;
		t[n++] = (struct umm_tier_report){
			.tier_type = UMM_TIER_HOST_NODE,
			.tier_id = i,
			.resident_bytes = b->host_res[i],
			.reclaimable_bytes = b->host_rec[i],
		};
	}
	for (i = 0; i < MAX_GPUS; i++) {
		if (!b->dev_res[i])
			continue;
		t[n++] = (struct umm_tier_report){
			.tier_type = UMM_TIER_GPU,
			.tier_id = i,
			.resident_bytes = b->dev_res[i],
			.reclaimable_bytes = b->dev_rec[i],
		};
	}
	rep.count = n;
	rep.tiers = (uint64_t)(uintptr_t)t;
	if (ioctl(pr->umm_fd, UMM_IOC_REPORT, &rep))
		return -errno;
	pthread_mutex_lock(&pr->st_lock);
	pr->st.reports++;
	pthread_mutex_unlock(&pr->st_lock);
	return 0;
}

/* REPORT when the books changed, at most once per report interval. */
static void maybe_report(struct um_pressure *pr, bool force)
{
	struct books b;
	uint64_t t = um__now_ns();
	int ret;

	if (pr->umm_fd < 0)
		return;
	if (!force && t - pr->last_report_ns < pr->report_ns)
		return;
	atomic_store(&pr->dirty, false);
	if (collect(pr->ctx, &b))
		return;
	if (!force && pr->sent_valid && !memcmp(&b, &pr->sent, sizeof(b)))
		return;
	ret = send_report(pr, &b);
	if (ret) {
		um__log(pr->ctx, UM_LOG_WARN, "pressure: REPORT refused: %s",
			strerror(-ret));
		return;
	}
	pr->sent = b;
	pr->sent_valid = true;
	pr->last_report_ns = t;
}

/* ---- shedding ---------------------------------------------------------- */

/*
 * Tell the application: a PRESSURE event through the context's callback.
 * level is an enum umm_level; um_event's is 1 low, 2 medium, 3 critical.
 */
static void post_event(struct um_context *ctx, um_tier_t tier, um_tier_t dest,
		       uint64_t bytes, unsigned int umm_level)
{
	unsigned int level = umm_level > UMM_LEVEL_NORMAL ?
				     umm_level - UMM_LEVEL_NORMAL : 0;

	if (um__enter(ctx))
		return;
	um__event(ctx, UM_EVENT_PRESSURE, level, NULL, tier, dest, bytes, 0,
		  0);
	um__exit(ctx);
}

struct idle_copy {
	um_region_t h;
	uint64_t lru;
};

static int newest_first(const void *a, const void *b)
{
	const struct idle_copy *x = a, *y = b;

	return x->lru < y->lru ? 1 : x->lru > y->lru ? -1 : 0;
}

/* Our idle host copies on node (released, nothing in flight), newest first. */
static int idle_copies(struct um_context *ctx, int node, struct idle_copy **out)
{
	struct idle_copy *v;
	struct um_region *r;
	int n = 0, ret = um__enter(ctx);

	if (ret)
		return ret;
	v = malloc((ctx->nregions ? ctx->nregions : 1) * sizeof(*v));
	for (r = ctx->regions.next; v && r != &ctx->regions; r = r->next)
		/* a kept READ_MOSTLY copy of a device-resident region is
		 * not one: um_evict would evict its device copy instead */
		if (r->host && !r->acquired && !r->pending && !r->freeing &&
		    !um__tier_is_dev(r->residency) && node_of(ctx, r) == node)
			v[n++] = (struct idle_copy){ r->handle, r->lru };
	um__exit(ctx);
	if (!v)
		return -ENOMEM;
	qsort(v, (size_t)n, sizeof(*v), newest_first);
	*out = v;
	return n;
}

/*
 * Move up to bytes of our idle host copies off node to dest (another node
 * or the spill) with um_evict, one region per call, most recently used
 * first; returns bytes moved or -errno. Measured in the VM with node 0
 * filling at 32-64 MiB/s, where a 16 MiB move took 0.4-0.9 s: a training
 * loop walks its regions in order, so the one it used last is the one it
 * needs last (the oldest it restores to the device next, which takes that
 * copy off the node anyway); and between moves the application steps on
 * instead of waiting seconds for the context lock, its own evictions
 * going to the node the loop steered it to.
 */
static int64_t move_off(struct um_pressure *pr, int node, um_tier_t dest,
			uint64_t bytes)
{
	struct um_context *ctx = pr->ctx;
	struct idle_copy *v = NULL;
	uint64_t moved = 0;
	int n = idle_copies(ctx, node, &v), last = 0;

	for (int i = 0; i < n && moved < bytes; i++) {
		struct um_region_info ri = { .size = sizeof(ri) };
		int ret;

		/* an event came in: answer it first (keep_away goes on after) */
		if (pr->keep_yields && io_uring_cq_ready(&pr->ring)) {
			pr->keep_cut = true;
			break;
		}
		ret = um_evict(ctx, v[i].h, dest);

		/* gone, taken again or still in flight meanwhile: next one */
		if (!ret && !um_region_info(ctx, v[i].h, &ri) &&
		    ri.residency != UM_TIER_HOST_NODE((unsigned int)node))
			moved += ri.bytes;
		else if (ret && ret != -ENOENT && ret != -EBUSY &&
			 ret != -EOPNOTSUPP)
			last = ret;
	}
	free(v);
	if (n < 0)
		return n;
	return moved ? (int64_t)moved : last;
}

/*
 * Shed bytes from tier toward dest and wait; returns bytes freed. For a
 * host tier, moved copies leave free blocks in the pool's chunks: trimming
 * afterwards is what gives the node its memory back.
 */
static uint64_t shed(struct um_pressure *pr, um_tier_t tier, uint64_t bytes,
		     um_tier_t dest)
{
	struct um_context *ctx = pr->ctx;
	bool host = UM_TIER_TYPE(tier) == UM_TIER_HOST;
	uint64_t freed = 0;
	int64_t got, trimmed;

	if (host) {
		/* free pool chunks first: no copy at all */
		trimmed = um_pool_trim(ctx);
		if (trimmed > 0)
			freed += (uint64_t)trimmed;
	}
	if (freed >= bytes)
		return freed;
	if (host && UM_TIER_ID(tier) != UM_TIER_ANY_NODE &&
	    (UM_TIER_TYPE(dest) == UM_TIER_SPILL ||
	     (UM_TIER_TYPE(dest) == UM_TIER_HOST && dest != tier)))
		got = move_off(pr, (int)UM_TIER_ID(tier), dest, bytes - freed);
	else
		got = um_shed(ctx, tier, bytes - freed, dest);
	if ((got == -ENOSPC || got == -EOPNOTSUPP || got == 0) &&
	    dest != UM_TIER_NONE && UM_TIER_TYPE(dest) != UM_TIER_SPILL)
		got = um_shed(ctx, tier, bytes - freed, UM_TIER_NONE);
	/*
	 * Host copies move to another node or the spill before um_evict and
	 * um_shed return; only evictions from a device are still in flight.
	 * Waiting for every migration of the context would also wait for the
	 * application's own, and delay the ACK by them.
	 */
	if (got > 0 && (host || !um_wait_all(ctx)))
		freed += (uint64_t)got;
	if (host) {
		trimmed = um_pool_trim(ctx);
		(void)trimmed;	/* what the moves freed, counted in got */
	}
	pthread_mutex_lock(&pr->st_lock);
	pr->st.shed_calls++;
	if (got > 0)
		pr->st.shed_bytes += (uint64_t)got;
	pthread_mutex_unlock(&pr->st_lock);
	/* nothing to shed, or nowhere to put it: not worth a line each time */
	if (got < 0 && got != -ENOENT && got != -EOPNOTSUPP && got != -ENOSPC)
		um__log(ctx, UM_LOG_WARN,
			"pressure: shedding %llu bytes from %s failed: %s",
			(unsigned long long)bytes, host ? "host" : "device",
			strerror((int)-got));
	return freed;
}

static void ack(struct um_pressure *pr, const struct umm_event *ev,
		uint64_t freed)
{
	struct umm_ack a = {
		.size = sizeof(a),
		.seq = ev->seq,
		.bytes_freed = freed,
	};
	uint64_t lat;

	if (ioctl(pr->umm_fd, UMM_IOC_ACK, &a) && errno != ENOENT) {
		um__log(pr->ctx, UM_LOG_WARN, "pressure: ACK refused: %s",
			strerror(errno));
		return;
	}
	lat = um__now_ns() - ev->ts_ns;
	pthread_mutex_lock(&pr->st_lock);
	pr->st.acks++;
	pr->st.acked_bytes += freed;
	pr->st.last_ack_ns = lat;
	pr->st.sum_ack_ns += lat;
	if (lat > pr->st.max_ack_ns)
		pr->st.max_ack_ns = lat;
	pthread_mutex_unlock(&pr->st_lock);
}

/*
 * Bytes node can take before it falls to its low mark: the module's
 * low_bp of the node's memory, or the free memory we saw it go LOW at,
 * whichever is higher; a quarter of the node where neither is known.
 */
static uint64_t node_room(const struct um_pressure *pr, int node)
{
	uint64_t free_b, total, low = 0;
	long long bp = 0;
	char path[96];

	if (node < 0 || node >= 32 || um__numa_node_mem(node, &free_b, &total))
		return 0;
	snprintf(path, sizeof(path), UMM_SYSFS_NODES "/node%d/low_bp", node);
	if (!um__read_num(path, &bp) && bp >= 0 && bp <= 10000)
		low = total / 10000 * (uint64_t)bp;
	if (pr->low_mark[node] > low)
		low = pr->low_mark[node];
	if (!low)
		low = total / 4;
	return free_b > low ? free_b - low : 0;
}

/*
 * Where what we hold on from_node (held bytes, ask of them asked for) goes:
 * the node the module named if it has room for all of it; else the spill;
 * else that node if it has room for the ask at least. The module names the
 * node with most room, however little: filling it to its OOM killer would
 * be worse than the pressure we are answering (seen in the VM, with the
 * other node held at its low mark by umpressure).
 */
static um_tier_t dest_for(const struct um_pressure *pr, int dest_node,
			  int from_node, uint64_t held, uint64_t ask)
{
	uint64_t room = 0;

	if (dest_node >= 0 && dest_node != from_node &&
	    dest_node < (int)UM_TIER_ANY_NODE)
		room = node_room(pr, dest_node);
	if (room && room >= held)
		return UM_TIER_HOST_NODE((unsigned int)dest_node);
	if (pr->ctx->spill)
		return UM_TIER_DISK;
	if (room && room >= ask)
		return UM_TIER_HOST_NODE((unsigned int)dest_node);
	return UM_TIER_NONE;
}

/*
 * Host bytes held on node, or on every node but it (elsewhere); err when
 * the books cannot be read.
 */
static uint64_t held(struct um_pressure *pr, int node, bool elsewhere,
		     uint64_t err)
{
	uint64_t sum = 0;
	struct books b;

	if (collect(pr->ctx, &b))
		return err;
	for (int n = 0; n < UM_STATS_MAX_NODES; n++)
		if ((n == node) != elsewhere)
			sum += b.host_res[n];
	return sum;
}

/*
 * New host copies (evictions, restores from the spill) go to the context's
 * home node. While that node is under pressure and the module names one
 * with headroom, place them there instead, or the next step of the trainer
 * would bring back what was just moved away; back home on RELIEF.
 */
static void steer_home(struct um_pressure *pr, int from, int to)
{
	struct um_context *ctx = pr->ctx;

	if (to < 0 || to == from || to >= UM_POOL_MAX_NODES ||
	    !um__numa_node_valid(to) || um__enter(ctx))
		return;
	if (ctx->home_node == from) {
		if (pr->home_orig < 0)
			pr->home_orig = from;
		ctx->home_node = to;
		um__log(ctx, UM_LOG_INFO,
			"pressure: node %d is under pressure; new host copies go to node %d",
			from, to);
	}
	um__exit(ctx);
}

static void mark_hot(struct um_pressure *pr, uint32_t node, int dest_node)
{
	/* with no other node and no spill there is nowhere to keep them */
	if (node >= 32 || ((dest_node < 0 || dest_node == (int)node) &&
			   !pr->ctx->spill))
		return;
	pr->hot |= 1u << node;
	pr->hot_dest[node] = dest_node;
}

/* Between events: push what we hold on a hot node to its destination. */
static uint64_t shed(struct um_pressure *pr, um_tier_t tier, uint64_t bytes,
		     um_tier_t dest);

static void keep_off_hot(struct um_pressure *pr)
{
	struct books b;

	if (!pr->hot || collect(pr->ctx, &b))
		return;
	for (uint32_t n = 0; n < 32 && n < UM_STATS_MAX_NODES; n++) {
		if (!(pr->hot & (1u << n)) || !b.host_rec[n])
			continue;
		shed(pr, UM_TIER_HOST_NODE(n), b.host_rec[n],
		     dest_for(pr, pr->hot_dest[n], (int)n, b.host_res[n],
			      b.host_rec[n]));
		atomic_store(&pr->dirty, true);
	}
}

/*
 * Free chunks of the pool on nodes we are keeping off: moves and restores
 * leave them behind, and until they go back the node is no better off.
 */
static void trim_kept_off(struct um_pressure *pr)
{
	uint32_t nodes = pr->hot;

	if (pr->home_orig >= 0 && pr->home_orig < 32)
		nodes |= 1u << pr->home_orig;
	/*
	 * Without the context lock: a trim waits for a growth in progress
	 * (the refill thread pinning a chunk), which must not hold up the
	 * trainer's calls; the pool is thread-safe on its own.
	 */
	for (int n = 0; n < 32 && n < UM_POOL_MAX_NODES; n++) {
		if (!(nodes & (1u << n)) || um__enter_const(pr->ctx))
			continue;
		(void)um__pool_trim(pr->ctx->pool, n, 0);
	}
}

/*
 * Send new host copies home again if the home node, with free_b bytes
 * free, has room for what would come back and stays a quarter above its
 * low mark.
 */
static void try_home(struct um_pressure *pr, uint64_t free_b)
{
	struct um_context *ctx = pr->ctx;
	int home = pr->home_orig;
	uint64_t away, mark;

	if (home < 0 || home >= 32 || (pr->hot & (1u << home)))
		return;
	away = held(pr, home, true, UINT64_MAX);
	mark = pr->low_mark[home] + pr->low_mark[home] / 4;
	if (away > free_b || free_b - away < mark || um__enter(ctx))
		return;
	ctx->home_node = home;
	um__log(ctx, UM_LOG_INFO,
		"pressure: node %d has room again (%llu MiB free, %llu MiB to come back); new host copies go there",
		home, (unsigned long long)(free_b >> 20),
		(unsigned long long)(away >> 20));
	pr->home_orig = -1;
	um__exit(ctx);
}

static void steer_back(struct um_pressure *pr, const struct umm_event *ev)
{
	if (ev->tier_type != UMM_TIER_HOST_NODE || ev->tier_id >= 32 ||
	    ev->level > UMM_LEVEL_NORMAL)
		return;
	pr->hot &= ~(1u << ev->tier_id);
	if ((int)ev->tier_id == pr->home_orig)
		try_home(pr, ev->bytes_free);
}

/* Between events: is the node we steered away from roomy again? */
static void check_home(struct um_pressure *pr)
{
	uint64_t free_b, total;

	if (pr->home_orig < 0 ||
	    um__now_ns() - pr->last_home_check_ns < HOME_CHECK_NS)
		return;
	pr->last_home_check_ns = um__now_ns();
	if (!um__numa_node_mem(pr->home_orig, &free_b, &total))
		try_home(pr, free_b);
}

/*
 * Everything we hold on hot nodes goes to their destinations, and the pool
 * gives those nodes back its free chunks: every report interval while a
 * node is hot, and at once after answering an event's ask. An event that
 * arrives meanwhile stops the moves, so that its ACK does not wait for
 * them all; they go on once it is answered.
 */
static void keep_away(struct um_pressure *pr)
{
	io_uring_submit(&pr->ring);	/* the re-armed read: events show */
	pr->keep_yields = true;
	keep_off_hot(pr);
	pr->keep_yields = false;
	trim_kept_off(pr);
	check_home(pr);
	pr->last_keep_ns = pr->keep_cut ? 0 : um__now_ns();
	pr->keep_cut = false;
}

static void maybe_keep_away(struct um_pressure *pr)
{
	if ((pr->hot || pr->home_orig >= 0) &&
	    um__now_ns() - pr->last_keep_ns >= pr->report_ns)
		keep_away(pr);
}

static void handle_pressure(struct um_pressure *pr, const struct umm_event *ev)
{
	um_tier_t tier, dest;
	uint64_t freed = 0, t0;

	switch (ev->type) {
	case UMM_EVENT_PRESSURE:
	case UMM_EVENT_SHRINK:
		tier = UM_TIER_HOST_NODE(ev->tier_id);
		dest = dest_for(pr, ev->dest_node, (int)ev->tier_id,
				held(pr, (int)ev->tier_id, false, 0),
				ev->bytes_to_free);
		if (ev->level >= UMM_LEVEL_LOW) {
			if (ev->tier_id < 32 &&
			    ev->bytes_free > pr->low_mark[ev->tier_id])
				pr->low_mark[ev->tier_id] = ev->bytes_free;
			if (UM_TIER_TYPE(dest) == UM_TIER_HOST)
				steer_home(pr, (int)ev->tier_id,
					   ev->dest_node);
			mark_hot(pr, ev->tier_id, ev->dest_node);
		}
		break;
	case UMM_EVENT_OOM:
		tier = UM_TIER_HOST_ANY;
		dest = dest_for(pr, ev->dest_node, -1, ev->bytes_to_free,
				ev->bytes_to_free);
		break;
	case UMM_EVENT_GPU_BUDGET:
		tier = UM_TIER_GPU(ev->tier_id);
		dest = ev->dest_node >= 0 ?
			       UM_TIER_HOST_NODE((unsigned int)ev->dest_node) :
			       UM_TIER_NONE;
		break;
	default:
		return;
	}
	pthread_mutex_lock(&pr->st_lock);
	if (!pr->st.first_event_ns && ev->level >= UMM_LEVEL_LOW) {
		pr->st.first_event_ns = um__now_ns();
		pr->st.first_eta_ms = ev->eta_ms;
	}
	if (ev->level > pr->st.max_level)
		pr->st.max_level = ev->level;
	pthread_mutex_unlock(&pr->st_lock);
	post_event(pr->ctx, tier, dest, ev->bytes_to_free, ev->level);
	if (!ev->bytes_to_free)
		return;
	t0 = um__now_ns();
	freed = shed(pr, tier, ev->bytes_to_free, dest);
	um__log(pr->ctx, UM_LOG_DEBUG,
		"pressure: freed %llu of %llu bytes asked in %.1f ms",
		(unsigned long long)freed,
		(unsigned long long)ev->bytes_to_free,
		(double)(um__now_ns() - t0) / 1e6);
	if (ev->flags & UMM_EVENT_F_ACK)
		ack(pr, ev, freed);
	/*
	 * ACK first, with the ask met; then the rest of what we hold on the
	 * node goes as soon as the events read with this one are answered,
	 * not at the next tick: a node filling at 64 MiB/s goes from LOW to
	 * its min watermark in under 2 s.
	 */
	if (pr->hot)
		pr->last_keep_ns = 0;
	atomic_store(&pr->dirty, true);
}

static const char *module_event_name(uint32_t type)
{
	static const char *const names[] = {
		"invalid", "pressure", "relief", "shrink", "oom", "gpu_budget",
		"overflow", "shutdown", "enabled", "disabled",
	};

	return type < sizeof(names) / sizeof(names[0]) ? names[type] : "?";
}

static void handle_event(struct um_pressure *pr, const struct umm_event *ev)
{
	um__log(pr->ctx, UM_LOG_DEBUG,
		"pressure: umm %s seq %llu tier %u/%u level %u ask %llu free %llu dest %d eta %u ms",
		module_event_name(ev->type), (unsigned long long)ev->seq,
		ev->tier_type, ev->tier_id, ev->level,
		(unsigned long long)ev->bytes_to_free,
		(unsigned long long)ev->bytes_free, ev->dest_node, ev->eta_ms);
	pthread_mutex_lock(&pr->st_lock);
	pr->st.events++;
	pr->st.umm_events++;
	if (pr->last_seq && ev->seq > pr->last_seq + 1)
		pr->st.seq_gaps += ev->seq - pr->last_seq - 1;
	if (ev->type == UMM_EVENT_OVERFLOW)
		pr->st.overflows += ev->lost;
	pthread_mutex_unlock(&pr->st_lock);
	if (ev->seq > pr->last_seq)
		pr->last_seq = ev->seq;

	switch (ev->type) {
	case UMM_EVENT_OVERFLOW:
		um__log(pr->ctx, UM_LOG_WARN,
			"pressure: %llu umm events lost (ring overflow)",
			(unsigned long long)ev->lost);
		maybe_report(pr, true);
		break;
	case UMM_EVENT_DISABLED:
		if (pr->umm_enabled) {
			pr->umm_enabled = false;
			fall_back(pr, "umm.ko was disabled (enabled=0)");
		}
		break;
	case UMM_EVENT_ENABLED:
		if (!pr->umm_enabled) {
			pr->umm_enabled = true;
			psi_close(pr);
			publish_sources(pr);
			um__log(pr->ctx, UM_LOG_INFO,
				"pressure: umm.ko enabled again; using it");
			maybe_report(pr, true);
		}
		break;
	case UMM_EVENT_SHUTDOWN:
		/* end of file follows: the read completion closes the fd */
		break;
	case UMM_EVENT_RELIEF:
		steer_back(pr, ev);
		post_event(pr->ctx,
			   ev->tier_type == UMM_TIER_GPU ?
				   UM_TIER_GPU(ev->tier_id) :
				   UM_TIER_HOST_NODE(ev->tier_id),
			   UM_TIER_NONE, 0, ev->level);
		break;
	default:
		handle_pressure(pr, ev);
		break;
	}
}

/* PSI says tasks stall on memory: push the coldest host copies out. */
static void handle_psi(struct um_pressure *pr)
{
	struct um_stats st = { .size = sizeof(st) };
	uint64_t want;

	pthread_mutex_lock(&pr->st_lock);
	pr->st.events++;
	pr->st.psi_events++;
	pthread_mutex_unlock(&pr->st_lock);
	if (um_stats_get(pr->ctx, &st))
		return;
	want = st.host_total.current / 8;
	if (want < PSI_SHED_MIN)
		want = PSI_SHED_MIN;
	post_event(pr->ctx, UM_TIER_HOST_ANY, UM_TIER_NONE, want,
		   UMM_LEVEL_MEDIUM);
	shed(pr, UM_TIER_HOST_ANY, want,
	     pr->ctx->spill ? UM_TIER_DISK : UM_TIER_NONE);
	pr->last_psi_ns = um__now_ns();
}

/* ---- the loop ----------------------------------------------------------- */

static void arm_read(struct um_pressure *pr, int fd, void *buf, unsigned len,
		     uint64_t tag)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&pr->ring);

	if (!sqe)
		return;
	io_uring_prep_read(sqe, fd, buf, len, 0);
	io_uring_sqe_set_data64(sqe, tag);
}

static void arm_psi(struct um_pressure *pr)
{
	struct io_uring_sqe *sqe;

	if (pr->psi_fd < 0)
		return;
	sqe = io_uring_get_sqe(&pr->ring);
	if (!sqe)
		return;
	io_uring_prep_poll_add(sqe, pr->psi_fd, POLLPRI);
	io_uring_sqe_set_data64(sqe, TAG_PSI);
}

static void arm_umm(struct um_pressure *pr)
{
	if (pr->umm_fd < 0 || pr->umm_read_armed)
		return;
	arm_read(pr, pr->umm_fd, pr->evbuf, sizeof(pr->evbuf), TAG_UMM);
	pr->umm_read_armed = true;
}

static void on_umm(struct um_pressure *pr, int res)
{
	unsigned int i, n;

	pr->umm_read_armed = false;
	if (res == -EAGAIN || res == -EINTR)
		goto rearm;
	if (res <= 0) {
		char what[96];

		snprintf(what, sizeof(what), "umm.ko went away (%s)",
			 res ? strerror(-res) : "end of file");
		module_close(pr);
		fall_back(pr, what);
		return;
	}
	n = (unsigned int)res / sizeof(struct umm_event);
	for (i = 0; i < n; i++) {
		/* a copy: handling may take long, the buffer is re-armed */
		struct umm_event ev = pr->evbuf[i];

		if (ev.size != sizeof(ev))
			continue;
		handle_event(pr, &ev);
		if (ev.type == UMM_EVENT_SHUTDOWN) {
			module_close(pr);
			fall_back(pr, "umm.ko is shutting down");
			return;
		}
	}
rearm:
	arm_umm(pr);
}

static void on_psi(struct um_pressure *pr, int res)
{
	if (res < 0 || (res & (POLLERR | POLLNVAL))) {
		um__log(pr->ctx, UM_LOG_WARN,
			"pressure: PSI trigger failed; budgets only");
		psi_close(pr);
		publish_sources(pr);
		return;
	}
	if (res & POLLPRI)
		handle_psi(pr);
	arm_psi(pr);
}

/*
 * Wait for a completion in poll(2) on the ring's fd rather than inside
 * io_uring_enter: same wakeups, but tools that must know which system calls
 * block (valgrind serialises threads and would otherwise stall every other
 * thread of the process here) see an ordinary poll. Returns 0 when a
 * completion is ready, -ETIME after timeout_ms.
 */
static int wait_cqe(struct um_pressure *pr, int timeout_ms)
{
	struct pollfd pfd = { .fd = pr->ring.ring_fd, .events = POLLIN };
	int ret;

	ret = io_uring_submit(&pr->ring);
	if (ret < 0 && ret != -EBUSY && ret != -EAGAIN)
		return ret;
	if (io_uring_cq_ready(&pr->ring))
		return 0;
	ret = poll(&pfd, 1, timeout_ms);
	if (ret < 0)
		return errno == EINTR ? -ETIME : -errno;
	return ret ? 0 : -ETIME;
}

static void *loop(void *arg)
{
	struct um_pressure *pr = arg;
	int tick_ms = (int)(pr->report_ns / 1000000ull);
	struct io_uring_cqe *cqe;
	uint64_t tag;
	int ret, res;

	arm_umm(pr);
	arm_psi(pr);
	arm_read(pr, pr->wake_fd, &pr->wake_buf, sizeof(pr->wake_buf),
		 TAG_WAKE);
	maybe_report(pr, true);
	while (!atomic_load(&pr->stop)) {
		ret = wait_cqe(pr, tick_ms);
		if (ret == -ETIME) {
			maybe_keep_away(pr);
			if (pr->umm_fd >= 0)
				maybe_report(pr, false);
			continue;
		}
		if (ret)
			break;
		ret = io_uring_peek_cqe(&pr->ring, &cqe);
		if (ret == -EAGAIN || ret == -EINTR)
			continue;
		if (ret)
			break;
		tag = io_uring_cqe_get_data64(cqe);
		res = cqe->res;
		io_uring_cqe_seen(&pr->ring, cqe);
		switch (tag) {
		case TAG_UMM:
			on_umm(pr, res);
			break;
		case TAG_PSI:
			on_psi(pr, res);
			break;
		case TAG_WAKE:
			if (atomic_load(&pr->stop))
				goto out;
			arm_read(pr, pr->wake_fd, &pr->wake_buf,
				 sizeof(pr->wake_buf), TAG_WAKE);
			break;
		}
		maybe_keep_away(pr);
		if (atomic_load(&pr->dirty))
			maybe_report(pr, false);
	}
out:
	return NULL;
}

/* ---- start / stop ------------------------------------------------------- */

static bool env_off(const char *name)
{
	const char *v = getenv(name);

	return v && (!strcmp(v, "0") || !strcasecmp(v, "off") ||
		     !strcasecmp(v, "no") || !strcasecmp(v, "false"));
}

static uint64_t env_ms(const char *name, uint64_t def)
{
	const char *v = getenv(name);
	char *end;
	unsigned long ms;

	if (!v || !*v)
		return def;
	ms = strtoul(v, &end, 10);
	if (*end || !ms || ms > 60000)
		return def;
	return ms;
}

static void pr_free(struct um_pressure *pr)
{
	module_close(pr);
	psi_close(pr);
	if (pr->wake_fd >= 0)
		close(pr->wake_fd);
	pthread_mutex_destroy(&pr->st_lock);
	free(pr);
}

int um__pressure_start(struct um_context *ctx)
{
	char why_umm[192] = "", why_psi[192] = "", src[96];
	struct um_pressure *pr;
	const char *v;
	int ret;

	if (!ctx || ctx->pressure)
		return -EINVAL;
	if (env_off("LIBUM_PRESSURE")) {
		um__log(ctx, UM_LOG_INFO,
			"pressure: LIBUM_PRESSURE=0; sources: own budgets");
		return 0;
	}
	pr = calloc(1, sizeof(*pr));
	if (!pr)
		return -ENOMEM;
	pr->ctx = ctx;
	pr->umm_fd = pr->psi_fd = pr->wake_fd = -1;
	pr->home_orig = -1;
	pthread_mutex_init(&pr->st_lock, NULL);
	pr->report_ns = env_ms("LIBUM_PRESSURE_REPORT_MS", DEF_REPORT_MS) *
			1000000ull;
	pr->psi_path = getenv("LIBUM_PSI_PATH");
	if (!pr->psi_path)
		pr->psi_path = "/proc/pressure/memory";
	v = getenv("LIBUM_PRIORITY");
	pr->umm_prio = v ? atoi(v) : 0;
	default_name(pr->umm_name);

	pr->wake_fd = eventfd(0, EFD_CLOEXEC);
	if (pr->wake_fd < 0) {
		ret = -errno;
		goto err;
	}
	ret = io_uring_queue_init(8, &pr->ring, 0);
	if (ret)
		goto err;
	if (module_open(pr, why_umm, sizeof(why_umm)) || !pr->umm_enabled)
		psi_open(pr, why_psi, sizeof(why_psi));
	if (pr->umm_fd >= 0 && !pr->umm_enabled)
		snprintf(why_umm, sizeof(why_umm),
			 "umm.ko is loaded but disabled (enabled=0)");
	publish_sources(pr);
	sources_text(pr, src, sizeof(src));
	um__log(ctx, UM_LOG_INFO, "pressure: sources: %s%s%s%s%s", src,
		why_umm[0] ? "; " : "", why_umm, why_psi[0] ? "; PSI: " : "",
		why_psi);
	ctx->pressure = pr;
	/* never uninstalled: um__pressure_notify() checks ctx->pressure */
	ctx->books_changed = um__pressure_notify;
	ret = pthread_create(&pr->thread, NULL, loop, pr);
	if (ret) {
		ctx->pressure = NULL;
		io_uring_queue_exit(&pr->ring);
		ret = -ret;
		goto err;
	}
	pr->started = true;
	return 0;
err:
	pr_free(pr);
	return ret;
}

static void wake(struct um_pressure *pr)
{
	uint64_t one = 1;
	ssize_t n = write(pr->wake_fd, &one, sizeof(one));

	(void)n;
}

void um__pressure_stop(struct um_context *ctx)
{
	struct um_pressure *pr = pr_of(ctx);

	if (!pr)
		return;
	atomic_store(&pr->stop, true);
	wake(pr);
	if (pr->started)
		pthread_join(pr->thread, NULL);
	io_uring_queue_exit(&pr->ring);
	ctx->pressure = NULL;
	pr_free(pr);
}

void um__pressure_forget(struct um_context *ctx)
{
	struct um_pressure *pr = pr_of(ctx);

	if (!pr)
		return;
	io_uring_queue_exit(&pr->ring);
	module_close(pr);
	psi_close(pr);
	if (pr->wake_fd >= 0)
		close(pr->wake_fd);
	/* st_lock may be a copy of a lock a parent thread held: not touched */
	ctx->pressure = NULL;
	free(pr);
}

void um__pressure_notify(struct um_context *ctx)
{
	struct um_pressure *pr = pr_of(ctx);

	if (!pr)
		return;
	if (!atomic_exchange(&pr->dirty, true))
		wake(pr);
}

unsigned int um__pressure_sources(struct um_context *ctx)
{
	struct um_pressure *pr = pr_of(ctx);

	return pr ? atomic_load(&pr->sources) : UM_PSRC_BUDGET;
}

int um__pressure_stats(struct um_context *ctx, struct um_pressure_stats *st)
{
	struct um_pressure *pr = pr_of(ctx);

	if (!st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	if (!pr) {
		st->sources = UM_PSRC_BUDGET;
		return 0;
	}
	pthread_mutex_lock(&pr->st_lock);
	*st = pr->st;
	pthread_mutex_unlock(&pr->st_lock);
	return 0;
}
