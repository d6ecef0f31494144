/* SPDX-License-Identifier: MIT */
/*
 * pressure_source.c - the pressure loop's sources and umm.ko's protocol.
 *
 * Sources, in order of preference: umm.ko's /dev/umm (handshake, QUERY,
 * a read of its events armed on the loop's ring, REPORT of what the
 * context holds, ACK of what an event's ask freed), else a PSI memory
 * trigger polled for POLLPRI; and our own watch of our memory cgroup and
 * host budget (pressure_cgroup.c) wherever umm.ko does not watch them.
 * Losing the module only changes the set: the loop falls back to PSI and
 * our own cgroup watch, and comes back to the module on ENABLED. Each
 * source is one entry of um__psources[], which the loop arms, feeds its
 * completions and closes.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/umm.h>

#include "internal.h"
#include "pressure_internal.h"
#include "util.h"

#define PSI_PATH	"/proc/pressure/memory"
#define PSI_TRIGGER	"some 150000 2000000"	/* 150 ms stalled in 2 s */
#define PSI_SHED_MIN	(64ull << 20)

/* ---- sources ---------------------------------------------------------- */

/* The name umm.ko shows for us: LIBUM_CLIENT_NAME, else the process's. */
static void default_name(const char *env, char *name)
{
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

/*
 * Ask for every feature we use; a module that knows fewer refuses unknown
 * bits (EINVAL): then without the cgroup events, then plain events only.
 */
static int module_handshake(struct um_pressure *pr, int fd)
{
	static const uint64_t tries[] = {
		UMM_FEATURE_RELIEF | UMM_FEATURE_ALL_PRESSURE |
			UMM_FEATURE_CGROUP,
		UMM_FEATURE_RELIEF | UMM_FEATURE_ALL_PRESSURE,
		0,
	};
	struct umm_api api;

	for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
		api = (struct umm_api){
			.size = sizeof(api),
			.api = UMM_API_VERSION,
			.features = tries[i],
			.priority = pr->umm_prio,
		};
		memcpy(api.name, pr->umm_name, sizeof(api.name));
		if (!ioctl(fd, UMM_IOC_API, &api)) {
			/* the reply leaves it out where there are no events */
			pr->umm_cgroup = (tries[i] & UMM_FEATURE_CGROUP) &&
					 (api.features & UMM_FEATURE_CGROUP);
			return 0;
		}
		if (errno != EINVAL)
			return -errno;
	}
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
	const char *path = pr->ctx->set.umm_dev;
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

/*
 * On the loop's thread, with its ring alive: a poll of the closed trigger
 * would never complete (the ring holds the file) and the next trigger's
 * would never be armed, so it is cancelled (on_psi re-arms on the newer).
 */
static void psi_stop(struct um_pressure *pr)
{
	if (pr->psi_armed)
		um__pq_cancel(&pr->q, UM_PTAG_PSI);
	psi_close(pr);
}

/*
 * Our own cgroup watch, unless umm.ko watches our cgroup for us (it then
 * sends the same events, ACKed, and keeps the books of every client); the
 * host budget is ours alone, so with one the watch runs anyway.
 */
static bool own_watch_wanted(const struct um_pressure *pr)
{
	return !(pr->umm_fd >= 0 && pr->umm_enabled && pr->umm_cgroup) ||
	       pr->ctx->set.host_budget;
}

static void own_watch_open(struct um_pressure *pr, char *why, size_t len)
{
	char what[PATH_MAX + 64];

	if (!own_watch_wanted(pr) || pr->cgw.open)
		return;
	if (um__cgwatch_open(pr, why, len))
		return;
	um__cgwatch_describe(pr, what, sizeof(what));
	snprintf(why, len, "watching %s", what);
}

static bool module_active(const struct um_pressure *pr)
{
	return pr->umm_fd >= 0 && pr->umm_enabled;
}

static bool psi_active(const struct um_pressure *pr)
{
	return pr->psi_fd >= 0;
}

static unsigned int current_sources(const struct um_pressure *pr)
{
	unsigned int s = UM_PSRC_BUDGET;

	for (int t = 0; t < UM_PTAG_SOURCES; t++)
		if (um__psources[t]->active(pr))
			s |= um__psources[t]->bit;
	return s;
}

static void sources_text(const struct um_pressure *pr, char *buf, size_t len)
{
	size_t n = 0;

	for (int t = 0; t < UM_PTAG_SOURCES && n < len; t++)
		if (um__psources[t]->active(pr))
			n += (size_t)snprintf(buf + n, len - n, "%s, ",
					      um__psources[t]->name);
	if (n < len)
		snprintf(buf + n, len - n, "own budgets");
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
	char why[160] = "", why_cg[PATH_MAX + 96] = "", src[128];

	pr->hot = 0;	/* no more events to say when it is over */
	if (pr->psi_fd < 0)
		psi_open(pr, why, sizeof(why));
	own_watch_open(pr, why_cg, sizeof(why_cg));
	sources_text(pr, src, sizeof(src));
	um__log(pr->ctx, UM_LOG_WARN,
		"pressure: %s; falling back to: %s%s%s%s%s", what, src,
		why[0] ? "; " : "", why, why_cg[0] ? "; memory cgroup: " : "",
		why_cg);
	pthread_mutex_lock(&pr->st_lock);
	pr->st.fallbacks++;
	pthread_mutex_unlock(&pr->st_lock);
	publish_sources(pr);
}

/* ---- REPORT ------------------------------------------------------------- */

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

void um__pressure_report(struct um_pressure *pr, bool force)
{
	struct books b;
	uint64_t t = um__now_ns();
	int ret;

	if (pr->umm_fd < 0)
		return;
	if (!force && t - pr->last_report_ns < pr->report_ns)
		return;
	atomic_store(&pr->dirty, false);
	if (um__pressure_collect(pr->ctx, &b))
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

/* ---- events ------------------------------------------------------------ */

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
	uint64_t freed;

	um__log(pr->ctx, UM_LOG_DEBUG,
		"pressure: umm %s seq %llu tier %u/%u level %u ask %llu free %llu dest %d eta %u ms, read %.1f ms after it was sent",
		module_event_name(ev->type), (unsigned long long)ev->seq,
		ev->tier_type, ev->tier_id, ev->level,
		(unsigned long long)ev->bytes_to_free,
		(unsigned long long)ev->bytes_free, ev->dest_node, ev->eta_ms,
		(double)(um__now_ns() - ev->ts_ns) / 1e6);
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
		um__pressure_report(pr, true);
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
			psi_stop(pr);
			if (!own_watch_wanted(pr))
				um__cgwatch_stop(pr);
			publish_sources(pr);
			um__log(pr->ctx, UM_LOG_INFO,
				"pressure: umm.ko enabled again; using it");
			um__pressure_report(pr, true);
		}
		break;
	case UMM_EVENT_SHUTDOWN:
		/* end of file follows: the read completion closes the fd */
		break;
	case UMM_EVENT_RELIEF:
		um__pressure_steer_back(pr, ev);
		um__pressure_post_event(pr->ctx, um__pressure_event_tier(ev),
					UM_TIER_NONE, 0, ev->level);
		break;
	default:
		if (um__pressure_answer(pr, ev, &freed) &&
		    (ev->flags & UMM_EVENT_F_ACK))
			ack(pr, ev, freed);
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
	um__pressure_post_event(pr->ctx, UM_TIER_HOST_ANY, UM_TIER_NONE, want,
				UMM_LEVEL_MEDIUM);
	um__pressure_shed(pr, UM_TIER_HOST_ANY, want,
			  pr->ctx->spill ? UM_TIER_DISK : UM_TIER_NONE);
	pr->last_psi_ns = um__now_ns();
}

/* ---- on the loop's queue ----------------------------------------------- */

static void arm_psi(struct um_pressure *pr)
{
	if (pr->psi_fd < 0 || pr->psi_armed)
		return;
	pr->psi_armed = um__pq_poll(&pr->q, pr->psi_fd, POLLPRI, UM_PTAG_PSI);
}

static void arm_umm(struct um_pressure *pr)
{
	if (pr->umm_fd < 0 || pr->umm_read_armed)
		return;
	pr->umm_read_armed = um__pq_read(&pr->q, pr->umm_fd, pr->evbuf,
					 sizeof(pr->evbuf), UM_PTAG_UMM);
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
	pr->psi_armed = false;
	if (res == -ECANCELED) {
		arm_psi(pr);	/* a newer opening's trigger, if any */
		return;
	}
	if (pr->psi_fd < 0)
		return;	/* closed meanwhile: the module came back */
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

static const struct um_psource psource_umm = {
	.bit = UM_PSRC_UMM,
	.name = "umm.ko",
	.active = module_active,
	.arm = arm_umm,
	.done = on_umm,
	.close = module_close,
};

static const struct um_psource psource_psi = {
	.bit = UM_PSRC_PSI,
	.name = "PSI trigger",
	.active = psi_active,
	.arm = arm_psi,
	.done = on_psi,
	.close = psi_close,
};

const struct um_psource *const um__psources[UM_PTAG_SOURCES] = {
	[UM_PTAG_UMM] = &psource_umm,
	[UM_PTAG_PSI] = &psource_psi,
	[UM_PTAG_CGROUP] = &um__psource_cgroup,
	[UM_PTAG_CGPSI] = &um__psource_cgroup_psi,
};

void um__pressure_open_sources(struct um_pressure *pr)
{
	const struct um_settings *set = &pr->ctx->set;
	char why_umm[192] = "", why_psi[192] = "", why_cg[PATH_MAX + 96] = "";
	char src[128];

	pr->psi_path = set->psi_path ? set->psi_path : PSI_PATH;
	pr->umm_prio = set->priority;
	default_name(set->client_name, pr->umm_name);

	if (module_open(pr, why_umm, sizeof(why_umm)) || !pr->umm_enabled)
		psi_open(pr, why_psi, sizeof(why_psi));
	if (pr->umm_fd >= 0 && !pr->umm_enabled)
		snprintf(why_umm, sizeof(why_umm),
			 "umm.ko is loaded but disabled (enabled=0)");
	own_watch_open(pr, why_cg, sizeof(why_cg));
	publish_sources(pr);
	sources_text(pr, src, sizeof(src));
	um__log(pr->ctx, UM_LOG_INFO,
		"pressure: sources: %s%s%s%s%s%s%s%s", src,
		why_umm[0] ? "; " : "", why_umm, why_psi[0] ? "; PSI: " : "",
		why_psi, pr->umm_cgroup ? "; umm.ko watches our memory cgroup" :
					  "",
		why_cg[0] ? "; memory cgroup: " : "", why_cg);
}
