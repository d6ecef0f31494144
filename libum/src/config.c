/* SPDX-License-Identifier: MIT */
/*
 * config.c - um_config defaults and the LIBUM_* environment.
 *
 * One descriptor table drives parsing, validation and the DEBUG dump of
 * every option, so each is described once, and one rule holds for all of
 * them: a field the caller set wins, else its environment variable when set
 * and not empty, else the built-in default. Sizes take K, M, G or T
 * suffixes (powers of 1024, optional "B"/"iB"). Every variable that is set
 * is checked, used or not: a bad value fails context creation with -EINVAL
 * and one ERR line naming the variable, its value and what it takes. This
 * is the only file that reads the environment: the rest of libum reads the
 * resolved struct um_settings of its context.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <linux/umm.h>

#include "internal.h"
#include "spill.h"
#include "um_numa.h"

enum opt_type {
	/* with a field of struct um_config */
	OPT_SIZE, OPT_LEVEL, OPT_BACKEND, OPT_PATH,
	/* the environment only */
	OPT_SWITCH, OPT_BIT, OPT_MS, OPT_INT, OPT_NODE, OPT_NAME, OPT_FILE,
};

struct um_option {
	const char *env;
	enum opt_type type;
	size_t cfg_off;		/* offset in struct um_config */
	size_t set_off;		/* offset in struct um_settings */
	uint64_t def;		/* strings: none (NULL) */
	uint64_t min;		/* OPT_SIZE: smallest value the variable takes */
	const char *form;	/* what is accepted, for the ERR line */
};

#define CFG(f) offsetof(struct um_config, f)
#define SET(f) offsetof(struct um_settings, f)
#define NO_FIELD ((size_t)-1)
#define ENV_ONLY(name, type, field, def, form) \
	{ name, type, NO_FIELD, SET(field), (uint64_t)(def), 0, form }
#define SWITCH_FORM "1, on, yes, true or 0, off, no, false"

/*
 * Every variable libum reads, as libum(7) lists them, each into its field
 * of struct um_settings: the refill thread, the pressure loop, the NUMA
 * placement and the spill store take theirs from there.
 */
static const struct um_option options[] = {
	/* first: it decides which of the lines below are seen */
	{ "LIBUM_LOG_LEVEL", OPT_LEVEL, CFG(log_level), SET(log_level),
	  UM_LOG_INFO, 0, "err, warn, info, debug, off, or 0-7" },
	{ "LIBUM_BACKEND", OPT_BACKEND, CFG(backend), SET(backend),
	  UM_BACKEND_AUTO, 0, "sim, cuda or auto" },
	{ "LIBUM_DEVICE_BUDGET", OPT_SIZE, CFG(device_budget),
	  SET(device_budget), 0, 1,
	  "a size of at least 1 byte such as 512M or 8G; unset for the device's memory" },
	{ "LIBUM_SIM_CAPACITY", OPT_SIZE, CFG(sim_capacity), SET(sim_capacity),
	  UM_DEFAULT_SIM_CAPACITY, 1ull << 20, "a size of at least 1M" },
	{ "LIBUM_POOL_SIZE", OPT_SIZE, CFG(pool_size), SET(pool_size), 0, 0,
	  "a size, 0 for none" },
	{ "LIBUM_POOL_CHUNK", OPT_SIZE, CFG(pool_chunk), SET(pool_chunk),
	  UM_POOL_DEFAULT_CHUNK, UM_POOL_MIN_CHUNK, "a size of at least 2M" },
	{ "LIBUM_CHUNK_BYTES", OPT_SIZE, CFG(chunk_bytes), SET(chunk_bytes),
	  UM_DEFAULT_CHUNK_BYTES, UM_MIN_CHUNK_BYTES,
	  "a size of at least 64K" },
	{ "LIBUM_SPILL_DIR", OPT_PATH, CFG(spill_dir), SET(spill_dir), 0, 0,
	  "an absolute directory path, or off" },
	ENV_ONLY("LIBUM_POOL_REFILL", OPT_SWITCH, pool_refill, true,
		 SWITCH_FORM),
	ENV_ONLY("LIBUM_PRESSURE", OPT_SWITCH, pressure, true, SWITCH_FORM),
	ENV_ONLY("LIBUM_PRESSURE_REPORT_MS", OPT_MS, report_ms,
		 UM_DEFAULT_REPORT_MS, "milliseconds from 1 to 60000"),
	ENV_ONLY("LIBUM_PRIORITY", OPT_INT, priority, 0,
		 "an integer from -2147483648 to 2147483647"),
	ENV_ONLY("LIBUM_CLIENT_NAME", OPT_NAME, client_name, 0,
		 "1 to 31 printable ASCII characters"),
	ENV_ONLY("LIBUM_UMM_DEV", OPT_FILE, umm_dev, 0, "an absolute path"),
	ENV_ONLY("LIBUM_PSI_PATH", OPT_FILE, psi_path, 0, "an absolute path"),
	ENV_ONLY("LIBUM_CGROUP_DIR", OPT_PATH, cgroup_dir, 0,
		 "an absolute directory path"),
	{ "LIBUM_HOST_BUDGET", OPT_SIZE, CFG(host_budget), SET(host_budget), 0,
	  1ull << 20,
	  "a size of at least 1M such as 24G; unset for the memory cgroup's limit only" },
	ENV_ONLY("LIBUM_HOME_NODE", OPT_NODE, home_node, (int64_t)UM_HOME_AUTO,
		 "a NUMA node of this machine or any"),
	ENV_ONLY("LIBUM_SPILL_REMOVE_STALE", OPT_BIT, spill_remove_stale, false,
		 "1 or 0"),
};

#define NOPTIONS (sizeof(options) / sizeof(options[0]))
/* LIBUM_LOG_LEVEL=off (or 0-2): no line is at or below it */
#define LOG_OFF 0

/* What LIBUM_0.1's struct um_config held: its callers allocated this much. */
#define CONFIG_SIZE_0_1 offsetof(struct um_config, host_budget)
_Static_assert(CONFIG_SIZE_0_1 == 80, "LIBUM_0.1's struct um_config");

static void config_init(void *cfg, uint32_t size)
{
	if (!cfg)
		return;
	memset(cfg, 0, size);
	memcpy(cfg, &size, sizeof(size));	/* .size, the struct's first */
}

/*
 * um_config_init has two versions (libum.map): a program linked against
 * LIBUM_0.1 allocated 80 bytes and gets um_config_init@LIBUM_0.1, one
 * linked now sizeof(struct um_config). um_context_create() reads no
 * further than .size, so both kinds of struct work. No function is named
 * um_config_init itself: a static link binds the default, @@LIBUM_0.2.
 */
__asm__(".symver um__config_init_0_2, um_config_init@@LIBUM_0.2");
__asm__(".symver um__config_init_0_1, um_config_init@LIBUM_0.1");

void um__config_init_0_2(struct um_config *cfg)
{
	config_init(cfg, sizeof(*cfg));
}

void um__config_init_0_1(struct um_config *cfg)
{
	config_init(cfg, CONFIG_SIZE_0_1);
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

/* Digits only, at most max: strtoull would take " 5", "-1" and "0x10". */
static int parse_decimal(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		uint64_t d = (uint64_t)(*s - '0');

		if (*s < '0' || *s > '9' || d > max || v > (max - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int um__parse_log_level(const char *s, uint64_t *out)
{
	static const struct { const char *name; int level; } names[] = {
		{ "err", UM_LOG_ERR }, { "error", UM_LOG_ERR },
		{ "warn", UM_LOG_WARN }, { "warning", UM_LOG_WARN },
		{ "info", UM_LOG_INFO }, { "debug", UM_LOG_DEBUG },
		{ "off", LOG_OFF }, { "none", LOG_OFF },
	};
	uint64_t v;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcasecmp(s, names[i].name)) {
			*out = (uint64_t)names[i].level;
			return 0;
		}
	}
	if (parse_decimal(s, UM_LOG_DEBUG, &v))
		return -EINVAL;
	*out = v;
	return 0;
}

/*
 * Before a context exists (a um_config whose size cannot be trusted, so
 * neither can its log callback): stderr, unless LIBUM_LOG_LEVEL, read as
 * um_config_init() reads it, turns errors off.
 */
void um__log_early(const char *fmt, ...)
{
	const char *lv = getenv("LIBUM_LOG_LEVEL");
	uint64_t level;
	char buf[512];
	va_list ap;

	if (lv && *lv && !um__parse_log_level(lv, &level) && level < UM_LOG_ERR)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	um__log_stderr(UM_LOG_ERR, buf);
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

/* On and off, in any case. */
static int parse_switch(const char *s, uint64_t *out)
{
	static const struct { const char *word; bool on; } words[] = {
		{ "1", true }, { "on", true }, { "yes", true },
		{ "true", true }, { "0", false }, { "off", false },
		{ "no", false }, { "false", false },
	};

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		if (!strcasecmp(s, words[i].word)) {
			*out = words[i].on;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_int32(const char *s, uint64_t *out)
{
	uint64_t v;
	bool neg = *s == '-';

	if (parse_decimal(s + neg, neg ? 2147483648ull : 2147483647ull,
			      &v))
		return -EINVAL;
	*out = neg ? (uint64_t)-(int64_t)v : v;
	return 0;
}

static int parse_node(const char *s, uint64_t *out)
{
	uint64_t v;

	if (!strcmp(s, "any")) {
		*out = (uint64_t)(int64_t)UM_NUMA_ANY;
		return 0;
	}
	if (parse_decimal(s, INT32_MAX, &v) ||
	    !um__numa_node_valid((int)v))
		return -EINVAL;
	*out = v;
	return 0;
}

/* Printable ASCII only: these strings end up in log lines and files. */
static bool printable(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return true;
}

/*
 * A spill directory: absolute (a relative one would land wherever the
 * trainer was started), printable, no "." or ".." part, room for the file
 * names under PATH_MAX.
 */
static int parse_dir(const char *s)
{
	size_t n = strlen(s);

	if (s[0] != '/' || n > PATH_MAX - 64 || !printable(s, n))
		return -EINVAL;
	if (strstr(s, "/./") || strstr(s, "/../") ||
	    (n >= 2 && !strcmp(s + n - 2, "/.")) ||
	    (n >= 3 && !strcmp(s + n - 3, "/..")))
		return -EINVAL;
	return 0;
}

/* "off" turns the spill tier off (unset means the default directory). */
static bool spill_off(const struct um_option *o, const char *val)
{
	return o->set_off == SET(spill_dir) && !strcmp(val, "off");
}

/* What the pressure loop sends umm.ko (pressure_source.c drops blanks). */
static int parse_name(const char *s)
{
	size_t n = strlen(s);

	return n < UMM_NAME_LEN && printable(s, n) ? 0 : -EINVAL;
}

static bool is_string(enum opt_type type)
{
	return type == OPT_PATH || type == OPT_NAME || type == OPT_FILE;
}

/* The variable's value into v (a string is only checked); -EINVAL if bad. */
static int parse_value(const struct um_option *o, const char *val,
		       uint64_t *v)
{
	int ret;

	*v = 0;
	switch (o->type) {
	case OPT_SIZE:
		ret = um__parse_size(val, v);
		return ret || *v < o->min ? -EINVAL : 0;
	case OPT_LEVEL:
		return um__parse_log_level(val, v);
	case OPT_BACKEND:
		return parse_backend(val, v);
	case OPT_SWITCH:
		return parse_switch(val, v);
	case OPT_BIT:
		*v = val[0] == '1';
		return strcmp(val, "0") && strcmp(val, "1") ? -EINVAL : 0;
	case OPT_MS:
		return parse_decimal(val, 60000, v) || !*v ? -EINVAL : 0;
	case OPT_INT:
		return parse_int32(val, v);
	case OPT_NODE:
		return parse_node(val, v);
	case OPT_NAME:
		return parse_name(val);
	case OPT_FILE:
		return val[0] == '/' ? 0 : -EINVAL;
	case OPT_PATH:
		return spill_off(o, val) ? 0 : parse_dir(val);
	}
	return -EINVAL;
}

/* v (a string: a copy of val) into o's field of s. */
static int store(const struct um_option *o, struct um_settings *s,
		 uint64_t v, const char *val)
{
	void *f = (char *)s + o->set_off;

	switch (o->type) {
	case OPT_SIZE:
		*(uint64_t *)f = v;
		return 0;
	case OPT_SWITCH:
	case OPT_BIT:
		*(bool *)f = v != 0;
		return 0;
	case OPT_PATH:
	case OPT_NAME:
	case OPT_FILE:
		free(*(char **)f);
		*(char **)f = strdup(val);
		return *(char **)f ? 0 : -ENOMEM;
	default:
		*(int *)f = (int)(int64_t)v;
		return 0;
	}
}

static int parse_env(struct um_context *ctx, const struct um_option *o,
		     const char *val, struct um_settings *s)
{
	uint64_t v;

	if (parse_value(o, val, &v)) {
		um__log(ctx, UM_LOG_ERR,
			"config: %s=\"%s\" is not valid: want %s", o->env,
			val, o->form);
		return -EINVAL;
	}
	return store(o, s, v, val);
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
			char field[32];

			/* the field's name: its variable's, in lower case */
			snprintf(field, sizeof(field), "%s", o->env + 6);
			for (char *f = field; *f; f++)
				*f = (char)tolower((unsigned char)*f);
			um__log(ctx, UM_LOG_ERR,
				"config: %s %llu is below the minimum %llu",
				field, (unsigned long long)v,
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
		if (!spill_off(o, p) && parse_dir(p)) {
			um__log(ctx, UM_LOG_ERR,
				"config: spill_dir \"%.64s\" is not off or an absolute path of printable characters without . or ..",
				p);
			return -EINVAL;
		}
		s->spill_dir = strdup(p);
		if (!s->spill_dir)
			return -ENOMEM;
		break;
	}
	default:
		return 0;	/* no field */
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
 * The lines a context logs by default: every one up to INFO for a log
 * callback; without one they go to stderr, and only ERR lines, so that a
 * failure is seen and a working program stays quiet.
 */
static int default_level(const struct um_context *ctx)
{
	return ctx->log ? UM_LOG_INFO : UM_LOG_ERR;
}

static void set_default(const struct um_context *ctx,
			const struct um_option *o, struct um_settings *s)
{
	if (is_string(o->type))
		return;		/* NULL: not set */
	if (o->type == OPT_LEVEL)
		s->log_level = default_level(ctx);
	else
		(void)store(o, s, o->def, NULL);
}

static const char *nonempty(const char *v)
{
	return v && *v ? v : NULL;
}

/*
 * One option, by the rule of libum(7): the field when the caller set it,
 * else the variable when set, else the default. A variable is checked even
 * when the field wins, so that a typo is never silently ignored.
 */
static int resolve_one(struct um_context *ctx, const struct um_option *o,
		       const struct um_config *c, struct um_settings *s)
{
	struct um_settings scratch = { 0 };
	const char *val;
	bool given = false;
	int ret;

	set_default(ctx, o, s);
	if (o->cfg_off != NO_FIELD) {
		ret = take_field(ctx, o, c, s, &given);
		if (ret)
			return ret;
	}
	val = nonempty(getenv(o->env));
	if (!val)
		return 0;
	ret = parse_env(ctx, o, val, given ? &scratch : s);
	um__settings_free(&scratch);
	return ret;
}

/*
 * Names libum once read and reads no more: set, they would seem to work.
 * Each gets a WARN line naming the one to use.
 */
static const struct {
	const char *name, *use, *until;
} retired[] = {
	{ "UM_BACKEND", "LIBUM_BACKEND", "2026-12-02" },
};

static void warn_retired(struct um_context *ctx)
{
	for (size_t i = 0; i < sizeof(retired) / sizeof(retired[0]); i++)
		if (getenv(retired[i].name))
			um__log(ctx, UM_LOG_WARN,
				"config: %s is no longer read (it was until %s); set %s instead",
				retired[i].name, retired[i].until,
				retired[i].use);
}

/* A LIBUM_ variable libum does not know is most likely a typo. */
static void warn_unknown(struct um_context *ctx)
{
	extern char **environ;
	size_t i, len;

	warn_retired(ctx);
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, "LIBUM_", 6))
			continue;
		len = strcspn(*e, "=");
		for (i = 0; i < NOPTIONS; i++)
			if (strlen(options[i].env) == len &&
			    !strncmp(*e, options[i].env, len))
				break;
		if (i == NOPTIONS)
			um__log(ctx, UM_LOG_WARN,
				"config: %.*s is not a libum variable (see libum(7)); ignored",
				(int)len, *e);
	}
}

/*
 * spill_dir off: no spill tier; unset: the default directory where one
 * fits (spill_dir.c), else none. Either way spill_none says why there is
 * none, for the lines that need it.
 */
static int settle_spill(struct um_settings *s)
{
	char dir[PATH_MAX];
	const char *why;

	if (s->spill_dir && !strcmp(s->spill_dir, "off")) {
		free(s->spill_dir);
		s->spill_dir = NULL;
		snprintf(s->spill_none, sizeof(s->spill_none),
			 "no spill tier (spill_dir / LIBUM_SPILL_DIR is off)");
		return 0;
	}
	if (s->spill_dir)
		return 0;
	if (um__spill_default_dir(dir, sizeof(dir), &why)) {
		snprintf(s->spill_none, sizeof(s->spill_none),
			 "no spill tier (%s; set spill_dir / LIBUM_SPILL_DIR)",
			 why);
		return 0;
	}
	s->spill_dir = strdup(dir);
	s->spill_default = true;
	return s->spill_dir ? 0 : -ENOMEM;
}

/*
 * Resolves cfg (may be NULL) into s, option by option (resolve_one), and
 * checks every other LIBUM_* variable of the environment too.
 */
int um__settings_resolve(struct um_context *ctx, const struct um_config *cfg,
			 struct um_settings *s)
{
	struct um_config c;
	int ret = 0;

	memset(&c, 0, sizeof(c));
	if (cfg)
		memcpy(&c, cfg, cfg->size < sizeof(c) ? cfg->size : sizeof(c));
	memset(s, 0, sizeof(*s));
	/* until the level is known, the default one: ERR lines are seen */
	ctx->log_level = default_level(ctx);
	if (c.flags) {
		um__log(ctx, UM_LOG_ERR, "config: flags 0x%x must be 0",
			(unsigned int)c.flags);
		return -EINVAL;
	}
	for (size_t i = 0; i < NOPTIONS && !ret; i++) {
		ret = resolve_one(ctx, &options[i], &c, s);
		if (options[i].type == OPT_LEVEL)
			ctx->log_level = s->log_level;
	}
	if (ret) {
		um__settings_free(s);
		return ret;
	}
	ctx->log_level = s->log_level;
	ret = settle_spill(s);
	if (ret) {
		um__settings_free(s);
		return ret;
	}
	warn_unknown(ctx);
	dump(ctx, s);
	return 0;
}

void um__settings_free(struct um_settings *s)
{
	for (size_t i = 0; i < NOPTIONS; i++) {
		char **f = (char **)((char *)s + options[i].set_off);

		if (!is_string(options[i].type))
			continue;
		free(*f);
		*f = NULL;
	}
}
