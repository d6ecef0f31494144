/* SPDX-License-Identifier: MIT */
/*
 * Description: libum.so keeps LIBUM_0.1's ABI. A program linked against
 * LIBUM_0.1 (this one binds um_config_init@LIBUM_0.1, as such a program's
 * reference does) allocated an 80-byte struct um_config: the call leaves
 * the bytes after it alone and its context works, host_budget coming from
 * LIBUM_HOST_BUDGET only. A program linked now gets um_config_init@@LIBUM_0.2
 * and the whole struct. Linked against build/libum.so (make check).
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "um.h"

/* A reference to the old version, as an old program's call is bound. */
void um_config_init_0_1(struct um_config *cfg);
__asm__(".symver um_config_init_0_1, um_config_init@LIBUM_0.1");

#define OLD_SIZE 80
#define CANARY 0xa5

static int quiet_create(struct um_config *cfg, struct um_context **ctx)
{
	setenv("LIBUM_PRESSURE", "0", 1);
	setenv("LIBUM_SPILL_DIR", "off", 1);
	cfg->backend = UM_BACKEND_SIM;
	return um_context_create(cfg, ctx);
}

TEST(old_callers_80_bytes_untouched_after)
{
	union {
		struct um_config cfg;
		unsigned char b[OLD_SIZE + 32];
	} u;
	struct um_context *ctx = NULL;

	memset(u.b, CANARY, sizeof(u.b));
	um_config_init_0_1(&u.cfg);
	EXPECT_EQ(OLD_SIZE, u.cfg.size);
	for (size_t i = 0; i < OLD_SIZE; i++)
		if (i >= sizeof(u.cfg.size))
			ASSERT_EQ(0, u.b[i]) TH_LOG("byte %zu", i);
	for (size_t i = OLD_SIZE; i < sizeof(u.b); i++)
		ASSERT_EQ(CANARY, u.b[i]) TH_LOG("byte %zu overrun", i);
	/* what lies past .size is never read: the canary is no host_budget */
	ASSERT_EQ(0, quiet_create(&u.cfg, &ctx));
	EXPECT_EQ(0, um_context_destroy(ctx));
}

TEST(new_callers_get_the_whole_struct)
{
	struct um_config cfg;

	memset(&cfg, CANARY, sizeof(cfg));
	um_config_init(&cfg);
	EXPECT_EQ(sizeof(cfg), cfg.size);
	EXPECT_LT(OLD_SIZE, sizeof(cfg));
	EXPECT_EQ(0, cfg.host_budget);
}

TEST(both_versions_exported)
{
	void *old = dlvsym(RTLD_DEFAULT, "um_config_init", "LIBUM_0.1");
	void *cur = dlvsym(RTLD_DEFAULT, "um_config_init", "LIBUM_0.2");

	ASSERT_NONNULL(old);
	ASSERT_NONNULL(cur);
	EXPECT_NE(old, cur);
	/* dlsym (ctypes, a fresh link) finds the default, LIBUM_0.2 */
	EXPECT_EQ(cur, dlsym(RTLD_DEFAULT, "um_config_init"));
	EXPECT_EQ((void *)um_config_init_0_1, old);
}

TEST_HARNESS_MAIN
