// SPDX-License-Identifier: MIT
/*
 * Description: tools/common parsers, size formatting, medians and the JSON
 * writer give the documented results and refuse bad input.
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
	ASSERT_EQ(-EINVAL, ut_parse_u64("0x10", 0, 100, &u));
	ASSERT_EQ(-EINVAL, ut_parse_u64("4k", 0, 100, &u));
	ASSERT_EQ(0, ut_parse_double("1e-3", 0, 1, &d));
	ASSERT_TRUE(d == 1e-3);
	ASSERT_EQ(-ERANGE, ut_parse_double("2", 0, 1, &d));
	ASSERT_EQ(-EINVAL, ut_parse_double("nan", 0, 1, &d));
	ASSERT_EQ(-EINVAL, ut_parse_double("0.1x", 0, 1, &d));
	ASSERT_EQ(-ERANGE, ut_parse_double("inf", 0, 1, &d));
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

TEST(json_writer_shape)
{
	const char *want = "{\n  \"a\": 1,\n  \"s\": \"q\\\"\\n\",\n"
			   "  \"l\": [\n    true,\n    null\n  ],\n"
			   "  \"e\": {},\n  \"x\": null\n}\n";
	struct ut_json j;
	char buf[512];
	size_t n;
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
	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	ASSERT_STREQ(want, buf);
}

TEST(json_writer_line)
{
	const char *want = "{\"a\":1,\"l\":[true,{}],\"e\":[]}\n";
	struct ut_json j;
	char buf[128];
	size_t n;
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
	ut_json_obj_end(&j);
	ut_json_finish(&j);
	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	ASSERT_STREQ(want, buf);
}

/* ROOT/kernel/debug/umm/clients with @rows under the header. */
static int fake_clients(char *root, const char *rows)
{
	char path[256];
	FILE *f;

	if (!mkdtemp(root))
		return -errno;
	snprintf(path, sizeof(path), "%s/kernel", root);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/kernel/debug", root);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/kernel/debug/umm", root);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s%s", root, UT_UMM_CLIENTS);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "pid name priority ready queue_len queued events drops acks bytes_freed ack_ns_avg tiers(resident/reclaimable)\n%s",
		rows);
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
	ASSERT_EQ(0, fake_clients(root,
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
	free(c);
	fake_clients_rm(root);
}

TEST_HARNESS_MAIN
