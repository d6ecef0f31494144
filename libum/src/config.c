/* SPDX-License-Identifier: MIT */
/*
 * config.c - um_config defaults and LIBUM_* environment options.
 *
 * One descriptor table drives parsing, validation and the DEBUG dump of
 * every option (the mimalloc way): a zero field in struct um_config takes
 * its environment variable, else the built-in default. Sizes take K, M, G
 * or T suffixes (powers of 1024, optional "B"/"iB"). A bad value fails
 * context creation with -EINVAL and one ERR line naming the variable.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

enum opt_type { OPT_SIZE, OPT_LEVEL, OPT_BACKEND, OPT_PATH };

struct um_option {
	const char *env;
	enum opt_type type;
	size_t cfg_off;		/* offset in struct um_config */
	size_t set_off;		/* offset in struct um_settings */
	uint64_t def;
	uint64_t min;		/* smallest accepted non-default value */
};

#define CFG(f) offsetof(struct um_config, f)
#define SET(f) offsetof(struct um_settings, f)

static const struct um_option options[] = {
	{ "LIBUM_BACKEND", OPT_BACKEND, CFG(backend), SET(backend),
	  UM_BACKEND_AUTO, 0 },
	{ "LIBUM_DEVICE_BUDGET", OPT_SIZE, CFG(device_budget),
	  SET(device_budget), 0, 1 },
	{ "LIBUM_SIM_CAPACITY", OPT_SIZE, CFG(sim_capacity), SET(sim_capacity),
	  UM_DEFAULT_SIM_CAPACITY, 1ull << 20 },
	{ "LIBUM_POOL_SIZE", OPT_SIZE, CFG(pool_size), SET(pool_size), 0, 1 },
	{ "LIBUM_POOL_CHUNK", OPT_SIZE, CFG(pool_chunk), SET(pool_chunk),
	  UM_POOL_DEFAULT_CHUNK, UM_POOL_MIN_CHUNK },
	{ "LIBUM_CHUNK_BYTES", OPT_SIZE, CFG(chunk_bytes), SET(chunk_bytes),
	  UM_DEFAULT_CHUNK_BYTES, UM_MIN_CHUNK_BYTES },
	{ "LIBUM_SPILL_DIR", OPT_PATH, CFG(spill_dir), SET(spill_dir), 0, 0 },
	{ "LIBUM_LOG_LEVEL", OPT_LEVEL, CFG(log_level), SET(log_level),
	  UM_LOG_INFO, 0 },
};

void um_config_init(struct um_config *cfg)
{
	if (!cfg)
		return;
	memset(cfg, 0, sizeof(*cfg));
	cfg->size = sizeof(*cfg);
}

int um__parse_size(const char *s, uint64_t *out)
{
	uint64_t v = 0, mul = 1;
	const char *p = s;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	switch (*p) {
	case 'k': case 'K': mul = 1ull << 10; p++; break;
	case 'm': case 'M': mul = 1ull << 20; p++; break;
	case 'g': case 'G': mul = 1ull << 30; p++; break;
	case 't': case 'T': mul = 1ull << 40; p++; break;
	default: break;
	}
	if (mul > 1 && (*p == 'i' || *p == 'I'))
		p++;
	if (*p == 'b' || *p == 'B')
		p++;
	if (*p)
		return -EINVAL;
	if (v && mul > UINT64_MAX / v)
		return -EINVAL;
	*out = v * mul;
	return 0;
}

static int parse_level(const char *s, uint64_t *out)
{
	static const struct { const char *name; int level; } names[] = {
		{ "err", UM_LOG_ERR }, { "error", UM_LOG_ERR },
		{ "warn", UM_LOG_WARN }, { "warning", UM_LOG_WARN },
		{ "info", UM_LOG_INFO }, { "debug", UM_LOG_DEBUG },
	};
	uint64_t v;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcasecmp(s, names[i].name)) {
			*out = (uint64_t)names[i].level;
			return 0;
		}
	}
	if (um__parse_size(s, &v) || v > UM_LOG_DEBUG || strpbrk(s, "kKmMgGtTbB"))
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_backend(const char *s, uint64_t *out)
{
	if (!strcasecmp(s, "auto"))
		*out = UM_BACKEND_AUTO;
	else if (!strcasecmp(s, "sim"))
		*out = UM_BACKEND_SIM;
	else if (!strcasecmp(s, "cuda"))
		*out = UM_BACKEND_CUDA;
	else
		return -EINVAL;
	return 0;
}

static int parse_env(struct um_context *ctx, const struct um_option *o,
		     const char *name, const char *val, struct um_settings *s)
{
	uint64_t v = 0;
	int ret = 0;

	switch (o->type) {
	case OPT_SIZE:
		ret = um__parse_size(val, &v);
		if (!ret && v && v < o->min)
			ret = -EINVAL;
		break;
	case OPT_LEVEL:
		ret = parse_level(val, &v);
		break;
	case OPT_BACKEND:
		ret = parse_backend(val, &v);
		break;
	case OPT_PATH:
		if (!*val)
			return 0;
		free(s->spill_dir);
		s->spill_dir = strdup(val);
		return s->spill_dir ? 0 : -ENOMEM;
	}
	if (ret) {
		um__log(ctx, UM_LOG_ERR,
			"config: %s=\"%s\" is not valid (%s)", name, val,
			o->type == OPT_SIZE ? "a size like 4096, 64M, 2G" :
			o->type == OPT_LEVEL ? "err|warn|info|debug or 0-7" :
			"sim|cuda|auto");
		return -EINVAL;
	}
	if (!v)		/* 0 means "the default" */
		return 0;
	if (o->type == OPT_SIZE)
		*(uint64_t *)((char *)s + o->set_off) = v;
	else
		*(int *)((char *)s + o->set_off) = (int)v;
	return 0;
}

static int take_field(struct um_context *ctx, const struct um_option *o,
		      const struct um_config *c, struct um_settings *s,
		      bool *given)
{
	const char *cp = (const char *)c + o->cfg_off;
	uint64_t v;

	*given = false;
	switch (o->type) {
	case OPT_SIZE:
		memcpy(&v, cp, sizeof(v));
		if (!v)
			return 0;
		if (v < o->min) {
			um__log(ctx, UM_LOG_ERR,
				"config: %s %llu is below the minimum %llu",
				o->env + 6, (unsigned long long)v,
				(unsigned long long)o->min);
			return -EINVAL;
		}
		*(uint64_t *)((char *)s + o->set_off) = v;
		break;
	case OPT_LEVEL: {
		int32_t l;

		memcpy(&l, cp, sizeof(l));
		if (!l)
			return 0;
		if (l < 0 || l > UM_LOG_DEBUG) {
			um__log(ctx, UM_LOG_ERR, "config: log_level %d is not 0-7",
				(int)l);
			return -EINVAL;
		}
		s->log_level = l;
		break;
	}
	case OPT_BACKEND: {
		uint32_t b;

		memcpy(&b, cp, sizeof(b));
		if (b > UM_BACKEND_CUDA) {
			um__log(ctx, UM_LOG_ERR, "config: backend %u is unknown",
				b);
			return -EINVAL;
		}
		if (!b)
			return 0;
		s->backend = (int)b;
		break;
	}
	case OPT_PATH: {
		const char *p;

		memcpy(&p, cp, sizeof(p));
		if (!p)
			return 0;
		if (!*p) {
			um__log(ctx, UM_LOG_ERR, "config: spill_dir is empty");
			return -EINVAL;
		}
		s->spill_dir = strdup(p);
		if (!s->spill_dir)
			return -ENOMEM;
		break;
	}
	}
	*given = true;
	return 0;
}

static void dump(struct um_context *ctx, const struct um_settings *s)
{
	if (ctx->log_level < UM_LOG_DEBUG)
		return;
	um__log(ctx, UM_LOG_DEBUG,
		"config: backend=%d device_budget=%llu sim_capacity=%llu "
		"pool_size=%llu pool_chunk=%llu chunk_bytes=%llu "
		"spill_dir=%s log_level=%d", s->backend,
		(unsigned long long)s->device_budget,
		(unsigned long long)s->sim_capacity,
		(unsigned long long)s->pool_size,
		(unsigned long long)s->pool_chunk,
		(unsigned long long)s->chunk_bytes,
		s->spill_dir ? s->spill_dir : "(none)", s->log_level);
}

/*
 * Resolve cfg (may be NULL) into s: field, else environment, else default.
 * UM_BACKEND / LIBUM_BACKEND override the field (documented in um.h).
 */
int um__settings_resolve(struct um_context *ctx, const struct um_config *cfg,
			 struct um_settings *s)
{
	struct um_config c;
	int ret;

	memset(&c, 0, sizeof(c));
	if (cfg)
		memcpy(&c, cfg, cfg->size < sizeof(c) ? cfg->size : sizeof(c));
	if (c.flags) {
		um__log(ctx, UM_LOG_ERR, "config: flags 0x%x must be 0",
			(unsigned int)c.flags);
		return -EINVAL;
	}

	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++) {
		const struct um_option *o = &options[i];
		const char *val;
		bool given;

		if (o->type == OPT_PATH)
			s->spill_dir = NULL;
		else if (o->type == OPT_SIZE)
			*(uint64_t *)((char *)s + o->set_off) = o->def;
		else
			*(int *)((char *)s + o->set_off) = (int)o->def;

		ret = take_field(ctx, o, &c, s, &given);
		if (ret)
			goto fail;
		if (o->type == OPT_BACKEND) {
			/* the environment overrides the field */
			val = getenv("UM_BACKEND");
			if (val && *val) {
				ret = parse_env(ctx, o, "UM_BACKEND", val, s);
				if (ret)
					goto fail;
				continue;
			}
			given = false;
		}
		if (given)
			continue;
		val = getenv(o->env);
		if (!val || !*val)
			continue;
		ret = parse_env(ctx, o, o->env, val, s);
		if (ret)
			goto fail;
		if (o->type == OPT_LEVEL)
			ctx->log_level = s->log_level;
	}
	ctx->log_level = s->log_level;
	dump(ctx, s);
	return 0;
fail:
	um__settings_free(s);
	return ret;
}

void um__settings_free(struct um_settings *s)
{
	free(s->spill_dir);
	s->spill_dir = NULL;
}
