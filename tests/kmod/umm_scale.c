// SPDX-License-Identifier: GPL-2.0
/*
 * Description: umm.ko with thousands of clients. 4,000 clients of mixed
 * priorities (a few levels of many, some of one), opened in one order,
 * handshaken in another, some closed and more added in between, are asked
 * for a node's bytes exactly as a brute-force model says: lowest priority
 * first, oldest handshake first among equals, reclaimable bytes before the
 * rest (each client's bytes_to_free compared, in a round where the cut
 * falls among the reclaimable bytes and one where it falls among the
 * resident ones). And what one handshake costs with 1, 4,096 and 16,384
 * clients registered, printed (not judged: the VM is emulated and noisy).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"

#define ORDER_FIRST	3000	/* handshaken before the closes */
#define ORDER_LATER	1000	/* handshaken after them */
#define ORDER_CLIENTS	(ORDER_FIRST + ORDER_LATER)
#define COST_MAX	16384
#define COST_SAMPLES	64
#define COST_LEVELS	16	/* priorities 0 .. 15 among the registered */

TEST_TIMEOUT_SET(pressure_order_across_4000_clients, 900);
TEST_TIMEOUT_SET(handshake_cost_by_clients, 900);

/* xorshift64: the same clients every run */
static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static uint64_t rnd_in(uint64_t lo, uint64_t hi)
{
	return lo + rnd() % (hi - lo + 1);
}

static void shuffle(unsigned int *v, unsigned int n)
{
	for (unsigned int i = n - 1; i > 0; i--) {
		unsigned int j = rnd() % (i + 1), t = v[i];

		v[i] = v[j];
		v[j] = t;
	}
}

/* Room for @n more files than the harness and stdio use. */
static int files_for(unsigned int n)
{
	struct rlimit r = { n + 64, n + 64 };

	return setrlimit(RLIMIT_NOFILE, &r) ? -errno : 0;
}

/* Small rings, so thousands fit in the VM and under ring_bytes_max. */
struct knobs {
	uint64_t queue_len, ring_bytes_max;
};

static int knobs_small_rings(struct knobs *k)
{
	int ret;

	ret = attr_read_u64("queue_len", &k->queue_len);
	if (!ret)
		ret = attr_read_u64("ring_bytes_max", &k->ring_bytes_max);
	if (!ret)
		ret = attr_write("queue_len", "4");
	if (!ret)
		ret = attr_write_u64("ring_bytes_max", 1ull << 30);
	return ret;
}

static void knobs_restore(const struct knobs *k)
{
	attr_write_u64("queue_len", k->queue_len);
	attr_write_u64("ring_bytes_max", k->ring_bytes_max);
}

/* ---- who is asked for what: the model --------------------------------- */

struct cli {
	int fd;			/* -1 once closed */
	int prio;
	unsigned int shake;	/* handshake order, 0 for the first */
	uint64_t features;
	uint64_t resident;	/* on node 0 */
	uint64_t reclaimable;
	uint64_t ask;		/* what the model asks of it */
};

static struct cli cl[ORDER_CLIENTS];

/* Many clients on a few levels, a few alone on levels far away. */
static int pick_priority(void)
{
	static const int lone[] = { -2147483647 - 1, -1000, 77, 2147483647 };

	if (rnd() % 64 == 0)
		return lone[rnd() % 4];
	return (int)rnd_in(0, 6) - 3;
}

static int by_priority_then_shake(const void *a, const void *b)
{
	const struct cli *x = *(struct cli *const *)a;
	const struct cli *y = *(struct cli *const *)b;

	if (x->prio != y->prio)
		return x->prio < y->prio ? -1 : 1;
	return x->shake < y->shake ? -1 : x->shake > y->shake;
}

static struct cli *order[ORDER_CLIENTS];	/* the model's order */
static unsigned int nr_open;

static void model_sort(void)
{
	nr_open = 0;
	for (unsigned int i = 0; i < ORDER_CLIENTS; i++)
		if (cl[i].fd >= 0)
			order[nr_open++] = &cl[i];
	qsort(order, nr_open, sizeof(order[0]), by_priority_then_shake);
}

/*
 * The rule of design/umm.rst, done the slow and obvious way over the
 * sorted copy: @want bytes from the open clients, lowest priority and
 * oldest handshake first, reclaimable bytes first, then the rest of what
 * they hold.
 */
static void model_ask(uint64_t want)
{
	uint64_t left = want, more;
	unsigned int i;

	for (i = 0; i < nr_open; i++) {
		more = left < order[i]->reclaimable ? left : order[i]->reclaimable;
		order[i]->ask = more;
		left -= more;
	}
	for (i = 0; i < nr_open; i++) {
		more = order[i]->resident - order[i]->reclaimable;
		more = left < more ? left : more;
		order[i]->ask += more;
		left -= more;
	}
}

/* What an injected CRITICAL asks for: from its watermark to low + hyst. */
static uint64_t injected_critical_ask(void)
{
	uint64_t total = node_attr_u64(0, "total_bytes");
	uint64_t low = node_attr_u64(0, "low_bp");
	uint64_t crit = node_attr_u64(0, "critical_bp"), hyst = 0;

	attr_read_u64("hysteresis_bp", &hyst);
	return total * (low + hyst) / 10000 - total * crit / 10000;
}

/*
 * New books for every open client, random but scaled so that the model
 * cuts @want off in the middle of the client at fraction @cut of its
 * order: among the reclaimable bytes, or (@in_rest) among the rest once
 * everything reclaimable is asked. One client in eight holds nothing on
 * node 0 (its bytes are on node 1). A module that orders the clients
 * otherwise cuts elsewhere, and the clients around both places are asked
 * for other amounts.
 */
static int report_round(uint64_t want, double cut, int in_rest)
{
	static double recl[ORDER_CLIENTS], rest[ORDER_CLIENTS];
	double before = 0, all_recl = 0, scale_recl, scale_rest;
	unsigned int t = (unsigned int)(cut * nr_open), p;
	int ret;

	for (p = 0; p < nr_open; p++) {
		int holds = rnd() % 8 != 0 || p == t;

		recl[p] = holds ? (double)rnd_in(1, 1000) : 0;
		rest[p] = holds ? (double)rnd_in(1, 1000) : 0;
		all_recl += recl[p];
	}
	for (p = 0; p < t; p++)
		before += in_rest ? rest[p] : recl[p];
	if (in_rest) {
		scale_recl = want / 2.0 / all_recl;
		scale_rest = (want - want / 2.0) / (before + rest[t] / 2);
	} else {
		scale_recl = scale_rest = want / (before + recl[t] / 2);
	}
	for (p = 0; p < nr_open; p++) {
		struct cli *c = order[p];
		struct umm_tier_report r = { UMM_TIER_HOST_NODE, 1, 1 << 20, 0 };

		c->reclaimable = (uint64_t)(recl[p] * scale_recl);
		c->resident = c->reclaimable + (uint64_t)(rest[p] * scale_rest);
		if (recl[p]) {
			r.tier_id = 0;
			r.resident_bytes = c->resident;
			r.reclaimable_bytes = c->reclaimable;
		}
		ret = umm_report(c->fd, &r, 1, 0);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Inject CRITICAL on node 0 and compare what each client got with the
 * model. Returns the number of clients that differ; *@asked is the total
 * the clients were told.
 */
static int check_round(const char *round, uint64_t *asked)
{
	static struct umm_event got[ORDER_CLIENTS];
	static int have[ORDER_CLIENTS];
	unsigned int p, bad = 0, partial = 0;

	*asked = 0;
	for (p = 0; p < nr_open; p++)
		umm_drain(order[p]->fd);
	if (umm_inject("node 0 critical"))
		return -1;
	for (p = 0; p < nr_open; p++) {
		have[p] = umm_wait_tier(order[p]->fd, UMM_EVENT_PRESSURE,
					UMM_TIER_HOST_NODE, 0, &got[p], 0) == 1;
		if (have[p])
			*asked += got[p].bytes_to_free;
	}
	umm_inject("node 0 clear");
	model_ask(*asked);
	for (p = 0; p < nr_open; p++) {
		const struct cli *c = order[p];
		int event = c->ask || (c->features & UMM_FEATURE_ALL_PRESSURE);

		if (c->ask && c->ask != c->reclaimable && c->ask != c->resident)
			partial = p;
		if (have[p] == event &&
		    (!have[p] || (got[p].bytes_to_free == c->ask &&
				  !(got[p].flags & UMM_EVENT_F_ACK) == !c->ask)))
			continue;
		if (bad++ < 5)
			TH_LOG("%s: #%u in order (priority %d, handshake %u): asked %llu, model %llu",
			       round, p, c->prio, c->shake,
			       have[p] ? (unsigned long long)got[p].bytes_to_free : 0ull,
			       (unsigned long long)c->ask);
	}
	printf("# order: %s: %llu bytes asked, cut at #%u of %u, %u clients differ from the model\n",
	       round, (unsigned long long)*asked, partial, nr_open, bad);
	return bad;
}

/*
 * The debugfs table lists the clients in the order they are asked: the
 * positions at which it and the model name different clients.
 */
static int check_table(void)
{
	char line[512], name[64];
	unsigned int p = 0, id, bad = 0;
	FILE *f = fopen(UMM_DEBUGFS "/clients", "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*d %63s", name) != 1 ||
		    sscanf(name, "scale-%u", &id) != 1)
			continue;
		if (p >= nr_open || order[p] != &cl[id]) {
			if (bad++ < 5)
				TH_LOG("debugfs: #%u is scale-%u, model scale-%td",
				       p, id, p < nr_open ? order[p] - cl : -1);
		}
		p++;
	}
	fclose(f);
	return bad + (p != nr_open);
}

static int shake(unsigned int i, unsigned int *order_no)
{
	char name[UMM_NAME_LEN];

	snprintf(name, sizeof(name), "scale-%u", i);
	cl[i].shake = (*order_no)++;
	return umm_handshake(cl[i].fd, name, cl[i].prio, cl[i].features, NULL);
}

TEST(pressure_order_across_4000_clients)
{
	static const double cuts[] = { 0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95 };
	unsigned int perm[ORDER_CLIENTS], i, shaken = 0, closed = 0;
	uint64_t want = injected_critical_ask(), asked;
	char round[32];
	struct knobs k;

	ASSERT_LT(0, want);
	ASSERT_EQ(0, files_for(ORDER_CLIENTS));
	ASSERT_EQ(0, knobs_small_rings(&k));
	ASSERT_EQ(0, attr_write("enabled", "1"));
	for (i = 0; i < ORDER_CLIENTS; i++) {
		cl[i].fd = umm_open(0);
		ASSERT_LE(0, cl[i].fd) TH_LOG("open %u: %s", i,
					      strerror(-cl[i].fd));
		cl[i].prio = pick_priority();
		cl[i].features = rnd() % 5 == 0 ? UMM_FEATURE_ALL_PRESSURE : 0;
	}
	/* handshakes in an order of their own, not the order of open() */
	for (i = 0; i < ORDER_FIRST; i++)
		perm[i] = i;
	shuffle(perm, ORDER_FIRST);
	for (i = 0; i < ORDER_FIRST; i++)
		ASSERT_EQ(0, shake(perm[i], &shaken));
	/* closes: the oldest of a level, the last of one, whole lone levels */
	for (i = 0; i < ORDER_FIRST; i++) {
		if (rnd() % 4)
			continue;
		close(cl[i].fd);
		cl[i].fd = -1;
		closed++;
	}
	for (i = ORDER_FIRST; i < ORDER_CLIENTS; i++)
		ASSERT_EQ(0, shake(i, &shaken));
	model_sort();
	TH_LOG("%u clients open (%u closed)", nr_open, closed);
	EXPECT_EQ(0, check_table());

	for (int in_rest = 0; in_rest < 2; in_rest++) {
		for (i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
			snprintf(round, sizeof(round), "%s cut at %.2f",
				 in_rest ? "rest" : "reclaimable", cuts[i]);
			ASSERT_EQ(0, report_round(want, cuts[i], in_rest));
			EXPECT_EQ(0, check_round(round, &asked));
			EXPECT_EQ(want, asked);
		}
	}

	for (i = 0; i < ORDER_CLIENTS; i++)
		if (cl[i].fd >= 0)
			close(cl[i].fd);
	knobs_restore(&k);
}

/* ---- what a handshake costs ------------------------------------------- */

static int by_value(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The median time of one handshake with the clients open now already past
 * theirs, at the highest priority among them (behind all of them: the
 * longest walk for a list searched in order), each sample opened before
 * and closed after the timing.
 */
static int64_t handshake_ns(void)
{
	uint64_t t[COST_SAMPLES], t0;
	int fd, ret;

	for (int s = 0; s < COST_SAMPLES; s++) {
		fd = umm_open(0);
		if (fd < 0)
			return fd;
		t0 = now_ns();
		ret = umm_handshake(fd, "cost", COST_LEVELS - 1, 0, NULL);
		t[s] = now_ns() - t0;
		close(fd);
		if (ret)
			return ret;
	}
	qsort(t, COST_SAMPLES, sizeof(t[0]), by_value);
	return (int64_t)t[COST_SAMPLES / 2];
}

TEST(handshake_cost_by_clients)
{
	static const unsigned int at[] = { 1, 4096, COST_MAX };
	static int fds[COST_MAX];
	int64_t ns[3];
	unsigned int n = 0;
	struct knobs k;

	ASSERT_EQ(0, files_for(COST_MAX + 1));
	ASSERT_EQ(0, knobs_small_rings(&k));
	for (int a = 0; a < 3; a++) {
		/* registered: at[a] - 1 others, the measured one makes at[a] */
		while (n < at[a] - 1) {
			fds[n] = umm_client("bulk", (int)(rnd() % COST_LEVELS),
					    0, 0);
			ASSERT_LE(0, fds[n]) TH_LOG("client %u: %s", n,
						    strerror(-fds[n]));
			n++;
		}
		ns[a] = handshake_ns();
		ASSERT_LT(0, ns[a]);
	}
	for (unsigned int i = 0; i < n; i++)
		close(fds[i]);
	knobs_restore(&k);
	for (int a = 0; a < 3; a++)
		printf("# handshake: %5u clients: %8.1f us (median of %d), %.2f x the cost at 1\n",
		       at[a], ns[a] / 1000.0, COST_SAMPLES,
		       (double)ns[a] / (double)ns[0]);
}

TEST_HARNESS_MAIN
