/* SPDX-License-Identifier: MIT */
/*
 * helpers.h - shared helpers of libum's unit tests (header only, so any
 * tests/unit/test_*.c builds on its own).
 *
 * A context on the sim backend whose log lines are captured for asserts,
 * region shorthands, and data patterns with checksums: every test that
 * moves bytes checks they came back unchanged.
 */
#ifndef UM_TEST_HELPERS_H
#define UM_TEST_HELPERS_H

#include <dirent.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "refuse_io_uring.h"
#include "um.h"

#define KiB (1024ull)
#define MiB (1024ull * 1024)
#define GiB (1024ull * 1024 * 1024)

#define H__UNUSED __attribute__((unused))

/* ---- captured log ------------------------------------------------------ */

struct logcap {
	pthread_mutex_t lock;
	int n, err, warn, info, debug;
	char text[16384];	/* every line, "L<level> message\n" */
	size_t len;
};

static struct logcap g_log = { .lock = PTHREAD_MUTEX_INITIALIZER };

static H__UNUSED void logcap_fn(void *arg, int level, const char *msg)
{
	struct logcap *lc = arg;
	int n;

	pthread_mutex_lock(&lc->lock);
	lc->n++;
	if (level <= UM_LOG_ERR)
		lc->err++;
	else if (level == UM_LOG_WARN)
		lc->warn++;
	else if (level == UM_LOG_INFO)
		lc->info++;
	else
		lc->debug++;
	if (lc->len < sizeof(lc->text)) {
		n = snprintf(lc->text + lc->len, sizeof(lc->text) - lc->len,
			     "L%d %s\n", level, msg);
		if (n > 0)
			lc->len += (size_t)n;
		if (lc->len > sizeof(lc->text))
			lc->len = sizeof(lc->text);
	}
	if (getenv("UM_TEST_VERBOSE"))
		fprintf(stderr, "# log L%d %s\n", level, msg);
	pthread_mutex_unlock(&lc->lock);
}

static H__UNUSED void logcap_reset(void)
{
	pthread_mutex_lock(&g_log.lock);
	g_log.n = g_log.err = g_log.warn = g_log.info = g_log.debug = 0;
	g_log.len = 0;
	g_log.text[0] = '\0';
	pthread_mutex_unlock(&g_log.lock);
}

/* 1 if a captured line of exactly level contains every needle (NULL-ended) */
static H__UNUSED int logcap_has(int level, const char *needle, ...)
{
	char tag[8], *line, *save = NULL, *copy;
	int found = 0;

	snprintf(tag, sizeof(tag), "L%d ", level);
	pthread_mutex_lock(&g_log.lock);
	copy = strndup(g_log.text, g_log.len);
	pthread_mutex_unlock(&g_log.lock);
	if (!copy)
		return 0;
	for (line = strtok_r(copy, "\n", &save); line && !found;
	     line = strtok_r(NULL, "\n", &save)) {
		va_list ap;
		const char *n;

		if (strncmp(line, tag, strlen(tag)))
			continue;
		found = 1;
		va_start(ap, needle);
		for (n = needle; n; n = va_arg(ap, const char *))
			if (!strstr(line, n))
				found = 0;
		va_end(ap);
	}
	free(copy);
	return found;
}

/* ---- contexts and regions --------------------------------------------- */

static H__UNUSED void cfg_sim(struct um_config *cfg, uint64_t budget,
			      uint64_t capacity)
{
	um_config_init(cfg);
	cfg->backend = UM_BACKEND_SIM;
	cfg->device_budget = budget;
	cfg->sim_capacity = capacity;
	cfg->log = logcap_fn;
	cfg->log_arg = &g_log;
	cfg->log_level = UM_LOG_DEBUG;
}

/* A sim context with budget bytes (0: all of capacity). */
static H__UNUSED struct um_context *ctx_sim(uint64_t budget, uint64_t capacity)
{
	struct um_config cfg;
	struct um_context *ctx = NULL;

	cfg_sim(&cfg, budget, capacity);
	/* no pressure thread shedding behind the test's back */
	setenv("LIBUM_PRESSURE", "0", 0);
	if (um_context_create(&cfg, &ctx))
		return NULL;
	return ctx;
}

static H__UNUSED um_region_t region(struct um_context *ctx, int kind,
				    int prio, uint64_t bytes,
				    const char *name)
{
	struct um_region_desc d = {
		.size = sizeof(d),
		.kind = (uint32_t)kind,
		.priority = prio,
		.bytes = bytes,
		.name = name,
	};
	um_region_t r = 0;

	if (um_alloc(ctx, &d, &r))
		return 0;
	return r;
}

static H__UNUSED um_tier_t residency(struct um_context *ctx, um_region_t r)
{
	struct um_region_info i = { .size = sizeof(i) };

	if (um_region_info(ctx, r, &i))
		return 0xffffffffu;
	return i.residency;
}

static H__UNUSED int on_gpu(struct um_context *ctx, um_region_t r)
{
	return UM_TIER_TYPE(residency(ctx, r)) == UM_TIER_DEVICE;
}

/* ---- data ------------------------------------------------------------- */

static H__UNUSED uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

static H__UNUSED void pattern_fill(void *p, uint64_t bytes, uint64_t seed)
{
	unsigned char *b = p;
	uint64_t i = 0;

	for (; i + 8 <= bytes; i += 8) {
		uint64_t v = mix64(seed + i);

		memcpy(b + i, &v, 8);
	}
	for (; i < bytes; i++)
		b[i] = (unsigned char)mix64(seed + i);
}

/* Offset of the first byte that differs from the pattern, or -1. */
static H__UNUSED int64_t pattern_check(const void *p, uint64_t bytes,
				       uint64_t seed)
{
	const unsigned char *b = p;
	uint64_t i = 0;

	for (; i + 8 <= bytes; i += 8) {
		uint64_t v = mix64(seed + i);

		if (memcmp(b + i, &v, 8))
			for (uint64_t j = i; j < i + 8; j++)
				if (b[j] != ((unsigned char *)&v)[j - i])
					return (int64_t)j;
	}
	for (; i < bytes; i++)
		if (b[i] != (unsigned char)mix64(seed + i))
			return (int64_t)i;
	return -1;
}

static H__UNUSED uint64_t checksum(const void *p, uint64_t bytes)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;

	for (uint64_t i = 0; i < bytes; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* Acquire r on gpu0 and wait for it: *p is its bytes; released on error. */
static H__UNUSED int acquire_ptr(struct um_context *ctx, um_region_t r,
				 void **p)
{
	int ret = um_acquire(ctx, r, UM_TIER_GPU(0), NULL);

	if (ret)
		return ret;
	ret = um_wait(ctx, r);
	if (!ret)
		ret = um_ptr(ctx, r, p);
	if (ret)
		um_release(ctx, r);
	return ret;
}

/*
 * Acquire r on gpu0, write the pattern of seed, release. Returns 0 or the
 * first failing call's error.
 */
static H__UNUSED int put_pattern(struct um_context *ctx, um_region_t r,
				 uint64_t bytes, uint64_t seed)
{
	void *p;
	int ret = acquire_ptr(ctx, r, &p);

	if (ret)
		return ret;
	pattern_fill(p, bytes, seed);
	um_release(ctx, r);
	return 0;
}

/*
 * Acquire r on gpu0 and check the pattern of seed. Returns 0 when intact,
 * 1 when a byte differs, or -errno from a call.
 */
static H__UNUSED int get_pattern(struct um_context *ctx, um_region_t r,
				 uint64_t bytes, uint64_t seed)
{
	void *p;
	int ret = acquire_ptr(ctx, r, &p);

	if (ret)
		return ret;
	ret = pattern_check(p, bytes, seed) >= 0 ? 1 : 0;
	um_release(ctx, r);
	return ret;
}

static H__UNUSED uint64_t dev_current(struct um_context *ctx)
{
	struct um_stats st = { .size = sizeof(st) };

	if (um_stats_get(ctx, &st))
		return UINT64_MAX;
	return st.device[0].current;
}

/* Entries in a directory not starting with '.', or -1. */
static H__UNUSED int dir_entries(const char *path)
{
	struct dirent *de;
	DIR *d = opendir(path);
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/*
 * This process's thread count once it is back to want, polled for up to
 * 10 s: pthread_join() returns when the kernel clears the thread's tid,
 * before the exited task leaves /proc/self/task (valgrind widens that
 * window). A thread that never exits still fails the caller's check.
 */
static H__UNUSED int threads_settle(int want)
{
	struct timespec tick = { 0, 10 * 1000 * 1000 };
	int n = dir_entries("/proc/self/task");

	for (int i = 0; i < 1000 && n != want; i++) {
		nanosleep(&tick, NULL);
		n = dir_entries("/proc/self/task");
	}
	return n;
}

#endif /* UM_TEST_HELPERS_H */
