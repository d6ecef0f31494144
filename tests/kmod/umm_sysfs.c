// SPDX-License-Identifier: GPL-2.0
/*
 * Description: /sys/kernel/mm/umm. Every file of the ABI exists with its
 * exact mode and nothing else is there (table-driven); each file holds one
 * value; every knob takes its valid values and refuses invalid ones with
 * -EINVAL, changing nothing; figures refuse writes; the node watermarks, and
 * the cgroup thresholds (cgroup/), must stay ordered low > medium > critical.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"

enum kind { NUM, LEVEL, WO };

struct file_spec {
	const char *name;
	int mode;
	enum kind kind;
};

static const struct file_spec global_files[] = {
	{ "enabled", 0600, NUM },
	{ "interval_ms", 0600, NUM },
	{ "queue_len", 0600, NUM },
	{ "ring_bytes_max", 0600, NUM },
	{ "hysteresis_bp", 0600, NUM },
	{ "event_min_interval_ms", 0600, NUM },
	{ "repeat_interval_ms", 0600, NUM },
	{ "oom_wait_ms", 0600, NUM },
	{ "inject", 0200, WO },
	{ "api_version", 0400, NUM },
	{ "clients", 0400, NUM },
	{ "events_sent", 0400, NUM },
	{ "events_dropped", 0400, NUM },
	{ "overflows", 0400, NUM },
	{ "acks", 0400, NUM },
	{ "bytes_freed", 0400, NUM },
	{ "ack_latency_ns_avg", 0400, NUM },
	{ "ack_latency_ns_max", 0400, NUM },
	{ "shrinker_calls", 0400, NUM },
	{ "oom_calls", 0400, NUM },
	{ "oom_deferred", 0400, NUM },
	{ "ring_bytes", 0400, NUM },
	{ NULL }
};

static const struct file_spec node_files[] = {
	{ "low_bp", 0600, NUM },
	{ "medium_bp", 0600, NUM },
	{ "critical_bp", 0600, NUM },
	{ "critical_effective_bytes", 0400, NUM },
	{ "level", 0400, LEVEL },
	{ "free_bytes", 0400, NUM },
	{ "available_bytes", 0400, NUM },
	{ "total_bytes", 0400, NUM },
	{ "resident_bytes", 0400, NUM },
	{ "reclaimable_bytes", 0400, NUM },
	{ "eta_ms", 0400, NUM },
	{ "events", 0400, NUM },
	{ NULL }
};

static const struct file_spec gpu_files[] = {
	{ "budget_bytes", 0600, NUM },
	{ "level", 0400, LEVEL },
	{ "used_bytes", 0400, NUM },
	{ "reclaimable_bytes", 0400, NUM },
	{ "events", 0400, NUM },
	{ NULL }
};

static const struct file_spec cgroup_files[] = {
	{ "low_bp", 0600, NUM },
	{ "medium_bp", 0600, NUM },
	{ "critical_bp", 0600, NUM },
	{ "watched", 0400, NUM },
	{ NULL }
};

static const char *const levels[] = { "normal", "low", "medium", "critical" };

/* Check one file's value; returns 0 or 1 (a problem, logged). */
static int check_value(struct __test_metadata *_metadata, const char *path,
		       const struct file_spec *f)
{
	char buf[256];
	uint64_t v;

	if (f->kind == WO) {
		if (attr_read(path, buf, sizeof(buf)) >= 0) {
			TH_LOG("%s: write-only, yet readable", path);
			return 1;
		}
		return 0;
	}
	if (attr_read(path, buf, sizeof(buf)) < 0) {
		TH_LOG("%s: unreadable", path);
		return 1;
	}
	if (strchr(buf, '\n')) {
		TH_LOG("%s: more than one line", path);
		return 1;
	}
	/* every figure is unsigned (sums saturate at 2^64 - 1) */
	if (f->kind == NUM && attr_read_u64(path, &v)) {
		TH_LOG("%s: \"%s\" is not a number", path, buf);
		return 1;
	}
	if (f->kind == LEVEL) {
		for (size_t i = 0; i < 4; i++)
			if (!strcmp(buf, levels[i]))
				return 0;
		TH_LOG("%s: \"%s\" is not a level", path, buf);
		return 1;
	}
	return 0;
}

/* Check one directory against its table; returns the number of problems. */
static int check_dir(struct __test_metadata *_metadata, const char *dir,
		     const struct file_spec *spec)
{
	char path[512];
	struct dirent *de;
	int bad = 0, mode;
	DIR *d;

	for (const struct file_spec *f = spec; f->name; f++) {
		snprintf(path, sizeof(path), "%s/%s", dir, f->name);
		mode = attr_mode(path);
		if (mode != f->mode) {
			TH_LOG("%s: mode %o (%d), the ABI says %o", path,
			       mode < 0 ? 0 : mode, mode, f->mode);
			bad++;
			continue;
		}
		bad += check_value(_metadata, path, f);
	}
	/* and nothing that is not in the table */
	d = opendir(dir);
	if (!d) {
		TH_LOG("%s: %s", dir, strerror(errno));
		return bad + 1;
	}
	while ((de = readdir(d))) {
		struct stat st;
		int known = 0;

		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (de->d_name[0] == '.' || stat(path, &st) ||
		    S_ISDIR(st.st_mode))
			continue;
		for (const struct file_spec *f = spec; f->name; f++)
			known |= !strcmp(f->name, de->d_name);
		if (!known) {
			TH_LOG("%s is not in the ABI table", path);
			bad++;
		}
	}
	closedir(d);
	return bad;
}

TEST(global_files_and_modes)
{
	EXPECT_EQ(0, check_dir(_metadata, UMM_SYSFS, global_files));
}

TEST(node_files_and_modes)
{
	char dir[256];
	int nodes = 0;

	for (int nid = 0; nid < 64; nid++) {
		snprintf(dir, sizeof(dir), UMM_SYSFS "/nodes/node%d", nid);
		if (access(dir, F_OK))
			continue;
		nodes++;
		EXPECT_EQ(0, check_dir(_metadata, dir, node_files));
	}
	EXPECT_EQ(2, nodes) TH_LOG("the VM has two nodes with memory");
}

TEST(gpu_files_and_modes)
{
	char dir[256];

	for (int id = 0; id < UMM_MAX_GPUS; id++) {
		snprintf(dir, sizeof(dir), UMM_SYSFS "/gpus/gpu%d", id);
		ASSERT_EQ(0, access(dir, F_OK)) TH_LOG("%s", dir);
		EXPECT_EQ(0, check_dir(_metadata, dir, gpu_files));
	}
	snprintf(dir, sizeof(dir), UMM_SYSFS "/gpus/gpu%d", UMM_MAX_GPUS);
	EXPECT_NE(0, access(dir, F_OK));
}

TEST(cgroup_files_and_modes)
{
	uint64_t v;

	EXPECT_EQ(0, check_dir(_metadata, UMM_SYSFS "/cgroup", cgroup_files));
	ASSERT_EQ(0, attr_read_u64("cgroup/low_bp", &v));
	EXPECT_EQ(2000, v);
	ASSERT_EQ(0, attr_read_u64("cgroup/medium_bp", &v));
	EXPECT_EQ(1000, v);
	ASSERT_EQ(0, attr_read_u64("cgroup/critical_bp", &v));
	EXPECT_EQ(500, v);
}

TEST(node_figures_are_consistent)
{
	uint64_t free, total, api;

	ASSERT_EQ(0, attr_read_u64("nodes/node0/free_bytes", &free));
	ASSERT_EQ(0, attr_read_u64("nodes/node0/total_bytes", &total));
	EXPECT_LT(256ull << 20, total) TH_LOG("node0 has 512 MiB");
	EXPECT_GE(512ull << 20, total);
	EXPECT_LT(0, free);
	EXPECT_GE(total, free);
	ASSERT_EQ(0, attr_read_u64("api_version", &api));
	EXPECT_EQ(UMM_API_VERSION, api);
}

struct knob_case {
	const char *file;
	const char *const good[6];
	const char *const bad[10];
};

static const struct knob_case knobs[] = {
	{ "enabled", { "0", "1", "n", "YES", "0x1", "off" },
	  { "2", "abc", "-1", "\n", " ", "yellow", "t", "0n", "0x2",
	    "10" } },
	{ "interval_ms", { "10", "60000", "0x64", "100" },
	  { "9", "0", "60001", "-1", "abc", "1.5", "100x", "4294967296" } },
	{ "queue_len", { "4", "65536", "256" },
	  { "3", "0", "65537", "-1", "abc", "1e3" } },
	{ "ring_bytes_max", { "4096", "1099511627776", "0x4000000" },
	  { "4095", "0", "1099511627777", "-1", "abc", "64M" } },
	{ "hysteresis_bp", { "0", "5000", "200" },
	  { "5001", "-1", "abc", "10000" } },
	{ "event_min_interval_ms", { "0", "60000", "100" },
	  { "60001", "-1", "abc" } },
	{ "repeat_interval_ms", { "0", "3600000", "1000" },
	  { "3600001", "-1", "abc" } },
	{ "oom_wait_ms", { "0", "10000", "1000" },
	  { "10001", "-1", "abc", "1s" } },
	{ "gpus/gpu15/budget_bytes", { "0", "1099511627776", "0x1000", "0" },
	  { "abc", "-1", "1.5", "18446744073709551616", "1G" } },
	/* ordered against the others' defaults (1000, 500 / 2000, 500...) */
	{ "cgroup/low_bp", { "10000", "1001", "0x7d0" },
	  { "1000", "10001", "0", "-1", "abc", "4294967296" } },
	{ "cgroup/medium_bp", { "1999", "501", "1000" },
	  { "2000", "500", "-1", "abc" } },
	{ "cgroup/critical_bp", { "0", "999", "500" },
	  { "1000", "-1", "abc", "1.5" } },
};

TEST(knobs_take_valid_and_refuse_invalid_values)
{
	char old[64], now[64];

	for (size_t k = 0; k < sizeof(knobs) / sizeof(knobs[0]); k++) {
		const struct knob_case *kc = &knobs[k];

		ASSERT_LE(0, attr_read(kc->file, old, sizeof(old)));
		for (size_t i = 0; i < 6 && kc->good[i]; i++)
			EXPECT_EQ(0, attr_write(kc->file, kc->good[i]))
				TH_LOG("%s <- \"%s\"", kc->file, kc->good[i]);
		/* known state before the bad writes */
		ASSERT_EQ(0, attr_write(kc->file, old));
		for (size_t i = 0; i < 10 && kc->bad[i]; i++) {
			EXPECT_EQ(-EINVAL, attr_write(kc->file, kc->bad[i]))
				TH_LOG("%s <- \"%s\"", kc->file, kc->bad[i]);
			ASSERT_LE(0, attr_read(kc->file, now, sizeof(now)));
			EXPECT_STREQ(old, now)
				TH_LOG("%s changed by a refused write",
				       kc->file);
		}
	}
}

TEST(knob_values_read_back)
{
	uint64_t v, old;

	ASSERT_EQ(0, attr_read_u64("interval_ms", &old));
	ASSERT_EQ(0, attr_write("interval_ms", "0x7b"));
	ASSERT_EQ(0, attr_read_u64("interval_ms", &v));
	EXPECT_EQ(123, v);
	ASSERT_EQ(0, attr_write_u64("interval_ms", old));
	ASSERT_EQ(0, attr_write("enabled", "n"));
	ASSERT_EQ(0, attr_read_u64("enabled", &v));
	EXPECT_EQ(0, v);
	ASSERT_EQ(0, attr_write("enabled", "y"));
	ASSERT_EQ(0, attr_read_u64("enabled", &v));
	EXPECT_EQ(1, v);
}

TEST(figures_refuse_writes)
{
	static const char *const figs[] = {
		"clients", "events_sent", "api_version", "oom_calls",
		"oom_deferred",
		"nodes/node0/level", "nodes/node0/free_bytes",
		"gpus/gpu0/used_bytes", "gpus/gpu0/level", "cgroup/watched",
	};
	char before[64], after[64];

	for (size_t i = 0; i < sizeof(figs) / sizeof(figs[0]); i++) {
		ASSERT_LE(0, attr_read(figs[i], before, sizeof(before)));
		EXPECT_NE(0, attr_write(figs[i], "0")) TH_LOG("%s", figs[i]);
		ASSERT_LE(0, attr_read(figs[i], after, sizeof(after)));
		if (strcmp(figs[i], "nodes/node0/free_bytes"))
			EXPECT_STREQ(before, after) TH_LOG("%s", figs[i]);
	}
}

struct wm { uint64_t low, medium, critical; };

static void read_wm(struct __test_metadata *_metadata, int nid, struct wm *w)
{
	char p[128];

	snprintf(p, sizeof(p), "nodes/node%d/low_bp", nid);
	ASSERT_EQ(0, attr_read_u64(p, &w->low));
	snprintf(p, sizeof(p), "nodes/node%d/medium_bp", nid);
	ASSERT_EQ(0, attr_read_u64(p, &w->medium));
	snprintf(p, sizeof(p), "nodes/node%d/critical_bp", nid);
	ASSERT_EQ(0, attr_read_u64(p, &w->critical));
}

TEST(watermarks_stay_ordered)
{
	struct wm w0, w;

	read_wm(_metadata, 1, &w0);
	EXPECT_GT(w0.low, w0.medium);
	EXPECT_GT(w0.medium, w0.critical);
	EXPECT_GE(10000, w0.low);

	/* each refused write leaves all three as they were */
	EXPECT_EQ(-EINVAL, attr_write_u64("nodes/node1/low_bp", w0.medium));
	EXPECT_EQ(-EINVAL, attr_write_u64("nodes/node1/low_bp",
					   w0.critical));
	EXPECT_EQ(-EINVAL, attr_write_u64("nodes/node1/medium_bp", w0.low));
	EXPECT_EQ(-EINVAL, attr_write_u64("nodes/node1/medium_bp",
					   w0.critical));
	EXPECT_EQ(-EINVAL, attr_write_u64("nodes/node1/critical_bp",
					   w0.medium));
	EXPECT_EQ(-EINVAL, attr_write_u64("nodes/node1/low_bp", 10001));
	EXPECT_EQ(-EINVAL, attr_write("nodes/node1/critical_bp", "-1"));
	EXPECT_EQ(-EINVAL, attr_write("nodes/node1/low_bp", "abc"));
	read_wm(_metadata, 1, &w);
	EXPECT_EQ(w0.low, w.low);
	EXPECT_EQ(w0.medium, w.medium);
	EXPECT_EQ(w0.critical, w.critical);

	/* a valid new set, written in an order that keeps it valid */
	EXPECT_EQ(0, attr_write_u64("nodes/node1/low_bp", 10000));
	EXPECT_EQ(0, attr_write_u64("nodes/node1/medium_bp", 9999));
	EXPECT_EQ(0, attr_write_u64("nodes/node1/critical_bp", 9998));
	EXPECT_EQ(0, attr_write_u64("nodes/node1/critical_bp", 0));
	read_wm(_metadata, 1, &w);
	EXPECT_EQ(10000, w.low);
	EXPECT_EQ(9999, w.medium);
	EXPECT_EQ(0, w.critical);
	/* node 0 is not touched by node 1's knobs */
	read_wm(_metadata, 0, &w);
	EXPECT_EQ(w0.low, w.low);

	/* back: critical and medium first, low last */
	EXPECT_EQ(0, attr_write_u64("nodes/node1/critical_bp", w0.critical));
	EXPECT_EQ(0, attr_write_u64("nodes/node1/medium_bp", w0.medium));
	EXPECT_EQ(0, attr_write_u64("nodes/node1/low_bp", w0.low));
	read_wm(_metadata, 1, &w);
	EXPECT_EQ(w0.low, w.low);
	EXPECT_EQ(w0.medium, w.medium);
	EXPECT_EQ(w0.critical, w.critical);
}

TEST(inject_refuses_bad_commands)
{
	static const char *const bad[] = {
		"node 99 low", "node 0 bogus", "node 0 invalid", "gpu 16 low",
		"gpu 0 shrink 5", "node 0 shrink 0", "node 0 shrink",
		"oom 1", "blah", "node", "node x low", "gpu -1 low",
		"node 0 low extra", "", "\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (!bad[i][0])
			continue;	/* write(2) of 0 bytes never reaches it */
		EXPECT_EQ(-EINVAL, umm_inject(bad[i])) TH_LOG("\"%s\"", bad[i]);
	}
	EXPECT_EQ(0, umm_inject("node 0 clear"));
	EXPECT_EQ(0, umm_inject("gpu 0 clear\n"));
}

TEST_HARNESS_MAIN
