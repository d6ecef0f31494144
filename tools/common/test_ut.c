// SPDX-License-Identifier: MIT
/*
 * Description: tools/common parsers, size formatting, medians, the JSON
 * writer and the Prometheus exposition helpers give the documented results
 * and refuse bad input.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "um.h"
#include "ut.h"

TEST(size_plain_and_suffixes)
{
	uint64_t v;

	ASSERT_EQ(0, ut_parse_size("4096", &v));
	ASSERT_EQ(4096, v);
	ASSERT_EQ(0, ut_parse_size("64K", &v));
	ASSERT_EQ(65536, v);
	ASSERT_EQ(0, ut_parse_size("64k", &v));
	ASSERT_EQ(65536, v);
	ASSERT_EQ(0, ut_parse_size("16MiB", &v));
	ASSERT_EQ(16ull << 20, v);
	ASSERT_EQ(0, ut_parse_size("2 GB", &v));
	ASSERT_EQ(2ull << 30, v);
	ASSERT_EQ(0, ut_parse_size("1.5G", &v));
	ASSERT_EQ(3ull << 29, v);
	ASSERT_EQ(0, ut_parse_size("0", &v));
	ASSERT_EQ(0, v);
	ASSERT_EQ(0, ut_parse_size("12B", &v));
	ASSERT_EQ(12, v);
}

TEST(size_rejects_junk)
{
	uint64_t v = 7;

	ASSERT_EQ(-EINVAL, ut_parse_size("", &v));
	ASSERT_EQ(-EINVAL, ut_parse_size("-1", &v));
	ASSERT_EQ(-EINVAL, ut_parse_size("K", &v));
	ASSERT_EQ(-EINVAL, ut_parse_size("12Q", &v));
	ASSERT_EQ(-EINVAL, ut_parse_size("12KX", &v));
	ASSERT_EQ(-EINVAL, ut_parse_size("1.", &v));
	ASSERT_EQ(-EINVAL, ut_parse_size(" 1", &v));
	ASSERT_EQ(-EINVAL, ut_parse_size(NULL, &v));
	ASSERT_EQ(-ERANGE, ut_parse_size("16E", &v));
	ASSERT_EQ(-ERANGE, ut_parse_size("99999999999999999999", &v));
	ASSERT_EQ(-ERANGE, ut_parse_size("18446744073709551616", &v));
	ASSERT_EQ(7, v);	/* untouched on error */
}

TEST(u64_and_double_bounds)
{
	uint64_t u;
	double d;

	ASSERT_EQ(0, ut_parse_u64("42", 1, 100, &u));
	ASSERT_EQ(42, u);
	ASSERT_EQ(-ERANGE, ut_parse_u64("0", 1, 100, &u));
	ASSERT_EQ(-ERANGE, ut_parse_u64("101", 1, 100, &u));
	ASSERT_EQ(-EINVAL, ut_parse_u64("-3", 0, 100, &u));
	ASSERT_EQ(0, ut_parse_u64("0x10", 0, 100, &u));	/* the module's */
	ASSERT_EQ(16, u);
	ASSERT_EQ(-EINVAL, ut_parse_u64("4k", 0, 100, &u));
	ASSERT_EQ(0, ut_parse_double("1e-3", 0, 1, &d));
	ASSERT_TRUE(d == 1e-3);
	ASSERT_EQ(-ERANGE, ut_parse_double("2", 0, 1, &d));
	ASSERT_EQ(-EINVAL, ut_parse_double("nan", 0, 1, &d));
	ASSERT_EQ(-EINVAL, ut_parse_double("0.1x", 0, 1, &d));
	ASSERT_EQ(-ERANGE, ut_parse_double("inf", 0, 1, &d));
}

/* Documentation/ABI/testing/sysfs-kernel-mm-umm, "Values". */
TEST(grammar_numbers_as_the_module)
{
	uint64_t v = 7;

	ASSERT_EQ(0, ut_parse_num("010", &v));
	ASSERT_EQ(10, v);			/* not octal */
	ASSERT_EQ(0, ut_parse_num("0x1F", &v));
	ASSERT_EQ(31, v);
	ASSERT_EQ(0, ut_parse_num("0XfF", &v));
	ASSERT_EQ(255, v);
	ASSERT_EQ(0, ut_parse_num("0xffffffffffffffff", &v));
	ASSERT_EQ(UINT64_MAX, v);
	ASSERT_EQ(0, ut_parse_num("18446744073709551615", &v));
	ASSERT_EQ(UINT64_MAX, v);
	v = 7;
	ASSERT_EQ(-ERANGE, ut_parse_num("0x10000000000000000", &v));
	ASSERT_EQ(-ERANGE, ut_parse_num("18446744073709551616", &v));
	ASSERT_EQ(-EINVAL, ut_parse_num("0x", &v));
	ASSERT_EQ(-EINVAL, ut_parse_num("0x1g", &v));
	ASSERT_EQ(-EINVAL, ut_parse_num("+5", &v));
	ASSERT_EQ(-EINVAL, ut_parse_num("1f", &v));
	ASSERT_EQ(-EINVAL, ut_parse_num("5 ", &v));
	ASSERT_EQ(-EINVAL, ut_parse_num("", &v));
	ASSERT_EQ(7, v);
	/* sizes: every u64 the module takes; hex is plain bytes;
	 * fractions round down */
	ASSERT_EQ(0, ut_parse_size("18446744073709551615", &v));
	ASSERT_EQ(UINT64_MAX, v);
	/* sizes: hex is plain bytes; fractions round down */
	ASSERT_EQ(0, ut_parse_size("0x1000", &v));
	ASSERT_EQ(4096, v);
	ASSERT_EQ(-EINVAL, ut_parse_size("0x10M", &v));
	ASSERT_EQ(0, ut_parse_size("0.3K", &v));
	ASSERT_EQ(307, v);
	ASSERT_EQ(0, ut_parse_size("1.5K", &v));
	ASSERT_EQ(1536, v);
}

TEST(grammar_booleans_whole_words)
{
	ASSERT_EQ(1, ut_parse_bool("1"));
	ASSERT_EQ(1, ut_parse_bool("Y"));
	ASSERT_EQ(1, ut_parse_bool("yes"));
	ASSERT_EQ(1, ut_parse_bool("ON"));
	ASSERT_EQ(0, ut_parse_bool("0"));
	ASSERT_EQ(0, ut_parse_bool("n"));
	ASSERT_EQ(0, ut_parse_bool("No"));
	ASSERT_EQ(0, ut_parse_bool("off"));
	ASSERT_EQ(1, ut_parse_bool("TRUE"));
	ASSERT_EQ(0, ut_parse_bool("false"));
	/* numbers of the knobs' grammar, as umm.ko reads them: 0 or 1 only */
	ASSERT_EQ(1, ut_parse_bool("0x1"));
	ASSERT_EQ(0, ut_parse_bool("0X0"));
	ASSERT_EQ(1, ut_parse_bool("01"));
	ASSERT_EQ(-EINVAL, ut_parse_bool("10"));
	ASSERT_EQ(-EINVAL, ut_parse_bool("0x2"));
	ASSERT_EQ(-EINVAL, ut_parse_bool("+1"));
	ASSERT_EQ(-EINVAL, ut_parse_bool("yellow"));
	ASSERT_EQ(-EINVAL, ut_parse_bool("o"));
	ASSERT_EQ(-EINVAL, ut_parse_bool(""));
	ASSERT_EQ(-EINVAL, ut_parse_bool(NULL));
}

TEST(knob_table_lookup_and_floor)
{
	const struct ut_knob *k;
	unsigned int id = 99;
	char path[64];
	uint64_t v = 7;

	k = ut_knob_find("gpus/gpu3/budget_bytes", &id);
	ASSERT_TRUE(k != NULL);
	ASSERT_EQ(3, id);
	ASSERT_EQ(UT_KNOB_GPU, k->dir);
	ASSERT_EQ(0, ut_knob_path(k, 12, path, sizeof(path)));
	ASSERT_STREQ("gpus/gpu12/budget_bytes", path);
	ASSERT_EQ(-EDOM, ut_knob_parse(k, "20", &v));	/* "G" forgotten */
	ASSERT_EQ(-EDOM, ut_knob_parse(k, "1048575", &v));
	ASSERT_EQ(7, v);
	ASSERT_EQ(0, ut_knob_parse(k, "0", &v));	/* no budget */
	ASSERT_EQ(0, v);
	ASSERT_EQ(0, ut_knob_parse(k, "1M", &v));
	ASSERT_EQ(1ull << 20, v);
	ASSERT_EQ(0, ut_knob_parse(k, "20G", &v));
	ASSERT_EQ(20ull << 30, v);
	k = ut_knob_find("enabled", &id);
	ASSERT_TRUE(k != NULL);
	ASSERT_EQ(0, ut_knob_parse(k, "0x1", &v));
	ASSERT_EQ(1, v);
	ASSERT_EQ(-EINVAL, ut_knob_parse(k, "0x2", &v));
	ASSERT_EQ(0, ut_knob_parse(k, "On", &v));
	ASSERT_EQ(1, v);
	k = ut_knob_find("interval_ms", &id);
	ASSERT_EQ(0, ut_knob_parse(k, "0x64", &v));
	ASSERT_EQ(100, v);
	ASSERT_EQ(-ERANGE, ut_knob_parse(k, "9", &v));
	ASSERT_TRUE(ut_knob_find("nodes/node1/level", &id) == NULL);
	ASSERT_TRUE(ut_knob_find("nodes/node/low_bp", &id) == NULL);
	ASSERT_TRUE(ut_knob_find("ring_bytes", &id) == NULL);
}

TEST(size_range_and_backend)
{
	uint64_t v = 7;

	ASSERT_EQ(0, ut_parse_size_range("4K", 4096, 8192, &v));
	ASSERT_EQ(4096, v);
	ASSERT_EQ(-ERANGE, ut_parse_size_range("4095", 4096, 8192, &v));
	ASSERT_EQ(-ERANGE, ut_parse_size_range("9K", 4096, 8192, &v));
	ASSERT_EQ(-EINVAL, ut_parse_size_range("4Q", 4096, 8192, &v));
	ASSERT_EQ(4096, v);
	ASSERT_EQ(UM_BACKEND_SIM, ut_parse_backend("sim"));
	ASSERT_EQ(UM_BACKEND_CUDA, ut_parse_backend("cuda"));
	ASSERT_EQ(UM_BACKEND_AUTO, ut_parse_backend("auto"));
	ASSERT_EQ(-EINVAL, ut_parse_backend("Sim"));
	ASSERT_EQ(-EINVAL, ut_parse_backend(""));
	ASSERT_EQ(-EINVAL, ut_parse_backend(NULL));
}

TEST(size_strings)
{
	char b[UT_SIZE_STR];

	ASSERT_STREQ("256 B", ut_size_str(256, b));
	ASSERT_STREQ("4 KiB", ut_size_str(4096, b));
	ASSERT_STREQ("1.5 MiB", ut_size_str(3ull << 19, b));
	ASSERT_STREQ("64 MiB", ut_size_str(64ull << 20, b));
	ASSERT_STREQ("16 EiB", ut_size_str(UINT64_MAX, b));
}

TEST(median_odd_even)
{
	double a[] = { 5, 1, 3 }, b[] = { 4, 1, 3, 2 };

	ASSERT_TRUE(ut_median(a, 3) == 3.0);
	ASSERT_TRUE(ut_median(b, 4) == 2.5);
	ASSERT_TRUE(ut_median(NULL, 0) == 0.0);
}

/* What was written to f, NUL-terminated in buf; closes f. */
static void read_back(FILE *f, char *buf, size_t len)
{
	size_t n;

	rewind(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

TEST(json_writer_shape)
{
	const char *want = "{\n  \"a\": 1,\n  \"s\": \"q\\\"\\n\",\n"
			   "  \"l\": [\n    true,\n    null\n  ],\n"
			   "  \"e\": {},\n  \"x\": null\n}\n";
	struct ut_json j;
	char buf[512];
	FILE *f = tmpfile();

	ASSERT_NONNULL(f);
	ut_json_init(&j, f);
	ut_json_obj_begin(&j, NULL);
	ut_json_u64(&j, "a", 1);
	ut_json_str(&j, "s", "q\"\n");
	ut_json_arr_begin(&j, "l");
	ut_json_bool(&j, NULL, true);
	ut_json_null(&j, NULL);
	ut_json_arr_end(&j);
	ut_json_obj_begin(&j, "e");
	ut_json_obj_end(&j);
	ut_json_dbl(&j, "x", 1.0 / 0.0);
	ut_json_obj_end(&j);
	ut_json_finish(&j);
	read_back(f, buf, sizeof(buf));
	ASSERT_STREQ(want, buf);
}

TEST(json_writer_line)
{
	const char *want = "{\"a\":1,\"l\":[true,{}],\"e\":[],"
			   "\"f\":0.6667,\"g\":null}\n";
	struct ut_json j;
	char buf[128];
	FILE *f = tmpfile();

	ASSERT_NONNULL(f);
	ut_json_init_line(&j, f);
	ut_json_obj_begin(&j, NULL);
	ut_json_u64(&j, "a", 1);
	ut_json_arr_begin(&j, "l");
	ut_json_bool(&j, NULL, true);
	ut_json_obj_begin(&j, NULL);
	ut_json_obj_end(&j);
	ut_json_arr_end(&j);
	ut_json_arr_begin(&j, "e");
	ut_json_arr_end(&j);
	ut_json_fixed(&j, "f", 2.0 / 3.0, 4);
	ut_json_fixed(&j, "g", 0.0 / 0.0, 4);
	ut_json_obj_end(&j);
	ut_json_finish(&j);
	read_back(f, buf, sizeof(buf));
	ASSERT_STREQ(want, buf);
}

TEST(prom_label_escapes_anything)
{
	char buf[128] = "";

	/* the format's three escapes; UTF-8 passes; the rest as \xNN */
	ASSERT_EQ(0, ut_prom_label(buf, sizeof(buf), "pid", "42"));
	ASSERT_EQ(0, ut_prom_label(buf, sizeof(buf), "name",
				   "a\"b\\c\nd\te\xc3\xa9\xff\xc3"));
	ASSERT_STREQ("pid=\"42\",name=\"a\\\"b\\\\c\\nd\\\\x09e\xc3\xa9"
		     "\\\\xff\\\\xc3\"", buf);
	/* overlong and surrogate forms are not UTF-8 either */
	buf[0] = '\0';
	ASSERT_EQ(0, ut_prom_label(buf, sizeof(buf), "n",
				   "\xc0\xaf\xed\xa0\x80"));
	ASSERT_STREQ("n=\"\\\\xc0\\\\xaf\\\\xed\\\\xa0\\\\x80\"", buf);
}

TEST(prom_label_all_or_nothing)
{
	char buf[16] = "a=\"1\"";

	ASSERT_EQ(-ENOSPC, ut_prom_label(buf, sizeof(buf), "name",
					 "too long for it"));
	ASSERT_STREQ("a=\"1\"", buf);
	ASSERT_EQ(0, ut_prom_label(buf, sizeof(buf), "b", "22"));
	ASSERT_STREQ("a=\"1\",b=\"22\"", buf);
	/* exactly full: 15 bytes and the NUL */
	ASSERT_EQ(-ENOSPC, ut_prom_label(buf, sizeof(buf), "c", ""));
	ASSERT_STREQ("a=\"1\",b=\"22\"", buf);
}

TEST(prom_samples)
{
	const char *want = "# HELP x_bytes Some bytes.\n# TYPE x_bytes gauge\n"
			   "x_bytes 18446744073709551615\n"
			   "x_bytes{n=\"1\"} -5\nx_seconds +Inf\n"
			   "x_seconds NaN\nx_ratio 0.05\n";
	char buf[256];
	FILE *f = tmpfile();

	ASSERT_NONNULL(f);
	ut_prom_family(f, "x_bytes", "gauge", "Some bytes.");
	ut_prom_u64(f, "x_bytes", "", UINT64_MAX);
	ut_prom_dbl(f, "x_bytes", "n=\"1\"", -5);
	ut_prom_dbl(f, "x_seconds", NULL, 1.0 / 0.0);
	ut_prom_dbl(f, "x_seconds", "", 0.0 / 0.0);
	ut_prom_dbl(f, "x_ratio", "", 500 / 1e4);
	read_back(f, buf, sizeof(buf));
	ASSERT_STREQ(want, buf);
}

#define ACK_COLUMNS \
	" ack_ns_sum ack_ms_le(1,2,5,10,20,50,100,200,500,1000,2000,5000,10000,inf)"

/*
 * A fresh @root (mkdtemp) with ROOT/kernel/debug/umm/ and its file @rel
 * (UT_UMM_CLIENTS, UT_UMM_CGROUPS) open for writing in *f.
 */
static int fake_debugfs(char *root, const char *rel, FILE **f)
{
	char path[256];

	if (!mkdtemp(root))
		return -errno;
	snprintf(path, sizeof(path), "%s/kernel", root);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/kernel/debug", root);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/kernel/debug/umm", root);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s%s", root, rel);
	*f = fopen(path, "w");
	return *f ? 0 : -errno;
}

/*
 * ROOT/kernel/debug/umm/clients with @rows under the header, @more the
 * columns a newer module appends to it ("" for none).
 */
static int fake_clients(char *root, const char *more, const char *rows)
{
	FILE *f;
	int ret = fake_debugfs(root, UT_UMM_CLIENTS, &f);

	if (ret)
		return ret;
	fprintf(f, "pid name priority ready queue_len queued events drops acks bytes_freed ack_ns_avg tiers(resident/reclaimable)%s\n%s",
		more, rows);
	return fclose(f) ? -errno : 0;
}

static void fake_clients_rm(const char *root)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd))
		fprintf(stderr, "# could not remove %s\n", root);
}

TEST(client_names_unescaped_never_forge_rows)
{
	char root[] = "/tmp/ut-clients-XXXXXX";
	struct ut_umm_client *c = NULL;
	size_t n = 0;

	/* a comm of "x\n4242 fake 0", a handshake name "my trainer \2" */
	ASSERT_EQ(0, fake_clients(root, "",
		"7 x\\0124242\\040fake\\0400 0 0 256 0 0 0 0 0 0 -\n"
		"8 my\\040trainer\\040\\134\\0012 -5 1 256 2 10 0 2 67108864 2100000 node0:1/0\n"));
	EXPECT_EQ(0, ut_umm_clients(root, &c, &n));
	ASSERT_EQ(2, n);
	EXPECT_EQ(7, c[0].pid);
	EXPECT_STREQ("x\\0124242 fake 0", c[0].name);
	EXPECT_EQ(0, c[0].ready);
	EXPECT_EQ(8, c[1].pid);
	EXPECT_STREQ("my trainer \\\\0012", c[1].name);
	EXPECT_EQ(-5, c[1].priority);
	EXPECT_EQ(67108864, c[1].bytes_freed);
	EXPECT_EQ(0, c[1].hist);
	free(c);
	fake_clients_rm(root);
}

/* The table of a module with @more columns and @row: ut_umm_clients(). */
static int clients_of(const char *more, const char *row)
{
	char root[] = "/tmp/ut-clients-XXXXXX";
	struct ut_umm_client *c = NULL;
	size_t n = 0;
	int ret = fake_clients(root, more, row);

	if (!ret)
		ret = ut_umm_clients(root, &c, &n);
	free(c);
	fake_clients_rm(root);
	return ret;
}

TEST(client_ack_buckets_parsed_exactly)
{
	char root[] = "/tmp/ut-clients-XXXXXX";
	struct ut_umm_client *c = NULL;
	size_t n = 0;

	ASSERT_EQ(0, fake_clients(root, ACK_COLUMNS,
		"9 my\\040t 0 1 256 0 3 0 2 0 1500000 - 4500000 0,1,1,0,0,0,0,0,0,0,0,0,0,7\n"));
	EXPECT_EQ(0, ut_umm_clients(root, &c, &n));
	ASSERT_EQ(1, n);
	EXPECT_EQ(1, c[0].hist);
	EXPECT_STREQ("my t", c[0].name);
	EXPECT_STREQ("-", c[0].books);
	EXPECT_EQ(1500000, c[0].ack_ns_avg);
	EXPECT_EQ(4500000, c[0].ack_ns_sum);
	EXPECT_EQ(0, c[0].ack_ms_le[0]);
	EXPECT_EQ(1, c[0].ack_ms_le[2]);
	EXPECT_EQ(7, c[0].ack_ms_le[UT_UMM_ACK_BUCKETS - 1]);
	free(c);
	fake_clients_rm(root);
	/* 13 or 15 buckets, a count that is not one, no sum, other bounds */
	EXPECT_EQ(-EPROTO, clients_of(ACK_COLUMNS,
		"9 t 0 1 256 0 3 0 2 0 1 - 4 0,1,1,0,0,0,0,0,0,0,0,0,0\n"));
	EXPECT_EQ(-EPROTO, clients_of(ACK_COLUMNS,
		"9 t 0 1 256 0 3 0 2 0 1 - 4 0,1,1,0,0,0,0,0,0,0,0,0,0,0,0\n"));
	EXPECT_EQ(-EPROTO, clients_of(ACK_COLUMNS,
		"9 t 0 1 256 0 3 0 2 0 1 - 4 0,1,x,0,0,0,0,0,0,0,0,0,0,0\n"));
	EXPECT_EQ(-EPROTO, clients_of(ACK_COLUMNS,
		"9 t 0 1 256 0 3 0 2 0 1 - 0,1,1,0,0,0,0,0,0,0,0,0,0,0\n"));
	EXPECT_EQ(-EPROTO, clients_of(" ack_ns_sum ack_ms_le(1,10,inf)",
		"9 t 0 1 256 0 3 0 2 0 1 - 4 0,1,1\n"));
	EXPECT_EQ(0, clients_of(ACK_COLUMNS,
		"9 t 0 1 256 0 3 0 2 0 1 - 4 0,1,1,0,0,0,0,0,0,0,0,0,0,0\n"));
}

#define CG_HEADER \
	"id path usage_bytes limit_bytes room_bytes level clients eta_ms fill_bps events\n"

/* ROOT/kernel/debug/umm/cgroups holding @text, read: ut_umm_cgroups(). */
static int cgroups_of(const char *text, struct ut_umm_cgroup **c, size_t *n)
{
	char root[] = "/tmp/ut-cgroups-XXXXXX";
	FILE *f;
	int ret = fake_debugfs(root, UT_UMM_CGROUPS, &f);

	if (!ret) {
		fputs(text, f);
		ret = fclose(f) ? -errno : 0;
	}
	if (!ret)
		ret = ut_umm_cgroups(root, c, n);
	fake_clients_rm(root);
	return ret;
}

/* The same when only the result matters. */
static int cgroups_ret(const char *text)
{
	struct ut_umm_cgroup *c = NULL;
	size_t n = 0;
	int ret = cgroups_of(text, &c, &n);

	free(c);
	return ret;
}

TEST(cgroup_rows_parsed_exactly)
{
	struct ut_umm_cgroup *c = NULL;
	size_t n = 0;

	ASSERT_EQ(0, cgroups_of(CG_HEADER
		"4242 /slurm/job42 1073741824 2147483648 536870912 low 2 12500 -4096 3\n"
		"7 /a/b\\040c/\\012x/\\134 0 18446744073709551615 18446744073709551615 normal 1 4294967295 0 0\n"
		"18446744073709551615 / 5 6 0 critical 4294967295 0 -9223372036854775808 18446744073709551615\n",
		&c, &n));
	ASSERT_EQ(3, n);
	EXPECT_EQ(4242, c[0].id);
	EXPECT_STREQ("/slurm/job42", c[0].path);
	EXPECT_EQ(1073741824, c[0].usage);
	EXPECT_EQ(2147483648, c[0].limit);
	EXPECT_EQ(536870912, c[0].room);
	EXPECT_STREQ("low", c[0].level);
	EXPECT_EQ(2, c[0].clients);
	EXPECT_EQ(12500, c[0].eta_ms);
	EXPECT_EQ(-4096, c[0].fill_bps);
	EXPECT_EQ(3, c[0].events);
	/* a blank and a backslash back, a newline still written \012 */
	EXPECT_STREQ("/a/b c/\\012x/\\", c[1].path);
	EXPECT_EQ(UT_UMM_NO_LIMIT, c[1].limit);
	EXPECT_EQ(UT_UMM_NO_LIMIT, c[1].room);
	EXPECT_EQ(UT_UMM_ETA_NONE, c[1].eta_ms);
	EXPECT_EQ(UINT64_MAX, c[2].id);
	EXPECT_EQ(4294967295u, c[2].clients);
	EXPECT_EQ(INT64_MIN, c[2].fill_bps);
	EXPECT_EQ(UINT64_MAX, c[2].events);
	free(c);
}

TEST(cgroup_table_empty_and_newer_columns)
{
	struct ut_umm_cgroup *c = NULL;
	size_t n = 7;

	EXPECT_EQ(0, cgroups_of(CG_HEADER, &c, &n));
	EXPECT_EQ(0, n);
	free(c);
	c = NULL;
	/* a newer module's column after ours: its value is skipped */
	EXPECT_EQ(0, cgroups_of("id path usage_bytes limit_bytes room_bytes level clients eta_ms fill_bps events later\n"
				"1 /x 1 2 1 normal 1 0 0 0 99\n", &c, &n));
	ASSERT_EQ(1, n);
	EXPECT_STREQ("/x", c[0].path);
	EXPECT_EQ(0, c[0].events);
	free(c);
}

TEST(cgroup_table_refuses_what_it_cannot_parse)
{
	/* no header, another header, a missing field, one too many */
	EXPECT_EQ(-EPROTO, cgroups_ret(""));
	EXPECT_EQ(-EPROTO, cgroups_ret("1 /x 1 2 1 normal 1 0 0 0\n"));
	EXPECT_EQ(-EPROTO, cgroups_ret("id path usage_bytes limit_bytes room_bytes level clients eta_ms events\n"));
	EXPECT_EQ(-EPROTO, cgroups_ret("id path usage_bytes limit_bytes room_bytes level clients eta_ms fill_bps eventsx\n"));
	EXPECT_EQ(-EPROTO, cgroups_ret(CG_HEADER "1 /x 1 2 1 normal 1 0 0\n"));
	EXPECT_EQ(-EPROTO, cgroups_ret(CG_HEADER "1 /x 1 2 1 normal 1 0 0 0 9\n"));
	/* a bad number in each kind of column */
	EXPECT_EQ(-EPROTO, cgroups_ret(CG_HEADER "1 /x 1 2x 1 normal 1 0 0 0\n"));
	EXPECT_EQ(-EPROTO, cgroups_ret(CG_HEADER "1 /x -1 2 1 normal 1 0 0 0\n"));
	EXPECT_EQ(-EPROTO, cgroups_ret(CG_HEADER "1 /x 1 18446744073709551616 1 normal 1 0 0 0\n"));
	EXPECT_EQ(-EPROTO, cgroups_ret(CG_HEADER "1 /x 1 2 1 normal 1 0 9223372036854775808 0\n"));
	EXPECT_EQ(-EPROTO, cgroups_ret(CG_HEADER "1 /x 1 2 1 normal 1 0 -9223372036854775809 0\n"));
	EXPECT_EQ(-EPROTO, cgroups_ret(CG_HEADER "1 /x 1 2 1 normal 1 0 - 0\n"));
	EXPECT_EQ(-EPROTO, cgroups_ret(CG_HEADER "x /x 1 2 1 normal 1 0 0 0\n"));
	/* a level that is a number (a column off) or too long */
	EXPECT_EQ(-EPROTO, cgroups_ret(CG_HEADER "1 /x 1 2 1 3 1 0 0 0\n"));
	EXPECT_EQ(-EPROTO, cgroups_ret(CG_HEADER "1 /x 1 2 1 criticalcritical 1 0 0 0\n"));
	/* one bad row spoils the table: nothing half read */
	EXPECT_EQ(-EPROTO, cgroups_ret(CG_HEADER "1 /x 1 2 1 normal 1 0 0 0\n"
					"2 /y 1 2 1 normal 1 0 0\n"));
	EXPECT_EQ(0, cgroups_ret(CG_HEADER "1 /x 1 2 1 normal 1 0 0 0\n"));
}

/* mkdir -p for the few directories of a fake tree. */
static void mkdirs(const char *root, const char *rel)
{
	char path[256], *p;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (p = path + strlen(root) + 1; (p = strchr(p, '/')); *p++ = '/') {
		*p = '\0';
		mkdir(path, 0700);
	}
	mkdir(path, 0700);
}

TEST(cgroup_table_missing_says_why)
{
	char root[] = "/tmp/ut-cgroups-XXXXXX";
	struct ut_umm_cgroup *c = NULL;
	size_t n = 0;

	ASSERT_NONNULL(mkdtemp(root));
	EXPECT_EQ(-ENOENT, ut_umm_cgroups(root, &c, &n));
	mkdirs(root, "kernel/mm/umm");
	mkdirs(root, "kernel/debug");
	EXPECT_EQ(-ENODEV, ut_umm_cgroups(root, &c, &n));
	mkdirs(root, "kernel/debug/tracing");
	EXPECT_EQ(-ENOTSUP, ut_umm_cgroups(root, &c, &n));
	/* umm.ko's debugfs files, without this one: a module before it */
	mkdirs(root, "kernel/debug/umm");
	EXPECT_EQ(-ENOSYS, ut_umm_cgroups(root, &c, &n));
	EXPECT_NULL(c);
	EXPECT_EQ(0, n);
	fake_clients_rm(root);
}

TEST_HARNESS_MAIN
