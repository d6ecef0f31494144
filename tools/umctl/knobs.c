// SPDX-License-Identifier: MIT
/*
 * knobs.c - umctl knobs, get, set and inject: every value is checked here
 * against the tools' knob table (tools/common/knobs.h, which the build
 * checks against kmod/sysfs.c) before it is written, so a mistake is a
 * usage error with a reason, and what the kernel still refuses is reported
 * with its errno.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "umctl.h"
#include "ut.h"

static const char *const levels[] = { "normal", "low", "medium", "critical" };

/* ---- writing and errors ------------------------------------------------- */

int umctl_write(const struct umctl *u, const char *rel, const char *val,
		bool append)
{
	char path[4096], line[128];
	int fd, n, ret = 0;
	ssize_t w;

	if (ut_umm_path(path, sizeof(path), u->root, rel))
		return -ENAMETOOLONG;
	n = snprintf(line, sizeof(line), "%s\n", val);
	fd = open(path, O_WRONLY | O_CLOEXEC | (append ? O_APPEND : O_TRUNC));
	if (fd < 0)
		return -errno;
	w = write(fd, line, (size_t)n);
	if (w < 0)
		ret = -errno;
	else if (w != n)
		ret = -EIO;	/* sysfs takes all of it or fails */
	if (close(fd) && !ret)
		ret = -errno;
	return ret;
}

static const char *hint(int err)
{
	switch (err) {
	case -EACCES:
	case -EPERM:
		return " (umm.ko's files are root's)";
	case -EINVAL:
		return " (the kernel refused the value)";
	case -ENOENT:
		return " (is umm.ko loaded?)";
	default:
		return "";
	}
}

int umctl_fail(const char *what, int err)
{
	const char *name = strerrorname_np(-err);

	ut_warn("%s: %s (%s)%s", what, strerror(-err), name ? name : "?",
		hint(err));
	return EX_RUNTIME;
}

int umctl_need_module(const struct umctl *u)
{
	char path[4096];
	int ret = ut_umm_present(u->root);

	if (!ret)
		return EX_DONE;
	snprintf(path, sizeof(path), "%s%s", u->root, UT_UMM_DIR);
	ut_umm_warn(u->root, path, ret);
	return EX_RUNTIME;
}

/* ---- knob names ---------------------------------------------------------- */

static const struct ut_knob *find_knob(const char *name, unsigned int *id)
{
	const struct ut_knob *k = ut_knob_find(name, id);

	if (!k)
		ut_die_usage("unknown knob '%s' (see '%s knobs')", name,
			     ut_progname);
	return k;
}

/* nodes/node<id> or gpus/gpu<id> must be there: a usage error otherwise. */
static int check_dir(const struct umctl *u, const char *what,
		     unsigned int id)
{
	char rel[64], path[4096];
	struct stat st;

	snprintf(rel, sizeof(rel), "%ss/%s%u", what, what, id);
	if (!ut_umm_path(path, sizeof(path), u->root, rel) &&
	    !stat(path, &st) && S_ISDIR(st.st_mode))
		return EX_DONE;
	ut_warn("umm.ko has no %s %u (no %s)", what, id, rel);
	return EX_USAGE;
}

/* cgroup/, which a module built before it does not have: not supported. */
static int check_cgroup(const struct umctl *u, const struct ut_knob *k)
{
	char path[4096];
	struct stat st;

	if (!ut_umm_path(path, sizeof(path), u->root, "cgroup") &&
	    !stat(path, &st) && S_ISDIR(st.st_mode))
		return EX_DONE;
	ut_warn("cgroup/%s: not supported by this umm.ko (no cgroup/: a module without memory cgroup thresholds)",
		k->name);
	return EX_RUNTIME;
}

/* Module there, and the knob's node, GPU or cgroup/ directory too. */
static int check_target(const struct umctl *u, const struct ut_knob *k,
			unsigned int id)
{
	int ret = umctl_need_module(u);

	if (ret || k->dir == UT_KNOB_GLOBAL)
		return ret;
	if (k->dir == UT_KNOB_CGROUP)
		return check_cgroup(u, k);
	return check_dir(u, k->dir == UT_KNOB_GPU ? "gpu" : "node", id);
}

/* ---- set ------------------------------------------------------------------ */

/* "; MIN..MAX" for a size knob with a range, "" for one without. */
static const char *size_range(const struct ut_knob *k, char buf[48])
{
	if (!k->min && k->max == UINT64_MAX)
		return "";
	snprintf(buf, 48, "; %" PRIu64 "..%" PRIu64, k->min, k->max);
	return buf;
}

/* The value in decimal as the kernel takes it, or a usage error. */
static void parse_value(const struct ut_knob *k, const char *name,
			const char *val, bool force, uint64_t *out)
{
	char range[48], fl[UT_SIZE_STR];
	int ret = ut_knob_parse(k, val, out);

	if (ret == -EDOM && !ut_parse_size(val, out) && force)
		return;		/* a value under the floor, on purpose */
	if (!ret)
		return;
	switch (k->kind) {
	case UT_KNOB_BOOL:
		ut_die_usage("%s: bad value '%s' (a boolean: 1, y, yes, on, true or 0, n, no, off, false, in any case, or a number that is 0 or 1)",
			     name, val);
	case UT_KNOB_SIZE:
		if (ret == -EDOM)
			ut_die_usage("%s: %s is %" PRIu64 " bytes, under %s: a unit forgotten? (write e.g. %sG, or --force)",
				     name, val, *out,
				     ut_size_str(k->floor, fl), val);
		ut_die_usage("%s: bad size '%s' (bytes, 0x hex, or decimal with an optional fraction and a K, M, G, T, P or E suffix, as 1.5G%s)",
			     name, val, size_range(k, range));
	default:
		ut_die_usage("%s: bad value '%s': a number (%" PRIu64 "..%" PRIu64 "), decimal or 0x hex",
			     name, val, k->min, k->max);
	}
}

/*
 * low_bp > medium_bp > critical_bp with v in place of name's own value, the
 * other two read from name's directory (a node's or cgroup/).
 */
static int check_order(const struct umctl *u, const char *name, uint64_t v)
{
	static const char *const wm[] = { "low_bp", "medium_bp", "critical_bp" };
	const char *base = strrchr(name, '/') + 1;
	char rel[128];
	uint64_t cur[3];
	int i, ret;

	for (i = 0; i < 3; i++) {
		if (!strcmp(base, wm[i])) {
			cur[i] = v;
			continue;
		}
		snprintf(rel, sizeof(rel), "%.*s%s", (int)(base - name), name,
			 wm[i]);
		ret = ut_umm_read_u64(u->root, rel, &cur[i]);
		if (ret)
			return umctl_fail(rel, ret);
	}
	if (cur[0] > cur[1] && cur[1] > cur[2])
		return EX_DONE;
	ut_warn("%s %" PRIu64 ": the watermarks must stay low_bp > medium_bp > critical_bp (would be %" PRIu64 " > %" PRIu64 " > %" PRIu64 ")",
		name, v, cur[0], cur[1], cur[2]);
	return EX_USAGE;
}

/* argv without --force (-f) wherever it is; returns the new argc. */
static int take_force(int argc, char **argv, bool *force)
{
	int i, n = 1;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--force") || !strcmp(argv[i], "-f"))
			*force = true;
		else
			argv[n++] = argv[i];
	}
	return n;
}

int cmd_set(struct umctl *u, int argc, char **argv)
{
	char name[96], what[160], val[32];
	const struct ut_knob *k;
	unsigned int id = 0;
	bool force = false;
	uint64_t v;
	int ret;

	argc = take_force(argc, argv, &force);
	if (argc != 3)
		ut_die_usage("usage: set [--force] KNOB VALUE");
	k = find_knob(argv[1], &id);
	if (ut_knob_path(k, id, name, sizeof(name)))
		ut_die_usage("knob name too long: '%s'", argv[1]);
	parse_value(k, name, argv[2], force, &v);
	if (k->dir == UT_KNOB_GPU && id >= UT_UMM_MAX_GPUS)
		ut_die_usage("%s: GPU ids are 0..%d", name,
			     UT_UMM_MAX_GPUS - 1);
	ret = check_target(u, k, id);
	if (!ret && k->kind == UT_KNOB_WM)
		ret = check_order(u, name, v);
	if (ret)
		return ret;
	snprintf(val, sizeof(val), "%" PRIu64, v);
	ret = umctl_write(u, name, val, false);
	snprintf(what, sizeof(what), "set %s %s", name, val);
	return ret ? umctl_fail(what, ret) : EX_DONE;
}

/* ---- get ------------------------------------------------------------------ */

static void put_value(const struct umctl *u, struct ut_json *j,
		      const char *name, uint64_t v)
{
	if (u->json)
		ut_json_u64(j, name, v);
	else if (j)
		printf("%s %" PRIu64 "\n", name, v);
	else
		printf("%" PRIu64 "\n", v);
}

/* The knobs of directory dir for id, values from v[] (a ut_umm's). */
static void put_dir(const struct umctl *u, struct ut_json *j,
		    enum ut_knob_dir dir, unsigned int id, const uint64_t *v)
{
	char name[96];
	size_t i;

	for (i = 0; i < ut_nknobs; i++) {
		if (ut_knobs[i].dir != dir)
			continue;
		ut_knob_path(&ut_knobs[i], id, name, sizeof(name));
		put_value(u, j, name, v[ut_knobs[i].field]);
	}
}

/*
 * Every knob: the global ones, then each node's and each GPU's, then
 * cgroup/'s where the module has it.
 */
static int get_all(const struct umctl *u, struct ut_json *j)
{
	struct ut_umm s;
	size_t n;
	int ret = ut_umm_read(u->root, &s);

	if (ret) {
		ut_umm_warn(u->root, s.failed[0] ? s.failed : "get", ret);
		ut_umm_free(&s);
		return EX_RUNTIME;
	}
	put_dir(u, j, UT_KNOB_GLOBAL, 0, s.g);
	for (n = 0; n < s.nnodes; n++)
		put_dir(u, j, UT_KNOB_NODE, s.nodes[n].id, s.nodes[n].v);
	for (n = 0; n < s.ngpus; n++)
		put_dir(u, j, UT_KNOB_GPU, s.gpus[n].id, s.gpus[n].v);
	if (s.has_cgroup)
		put_dir(u, j, UT_KNOB_CGROUP, 0, s.cg);
	ut_umm_free(&s);
	return EX_DONE;
}

static int get_one(const struct umctl *u, struct ut_json *j, const char *arg)
{
	const struct ut_knob *k;
	unsigned int id = 0;
	char name[96];
	uint64_t v;
	int ret;

	k = find_knob(arg, &id);
	if (ut_knob_path(k, id, name, sizeof(name)))
		ut_die_usage("knob name too long: '%s'", arg);
	ret = check_target(u, k, id);
	if (ret)
		return ret;
	ret = ut_umm_read_u64(u->root, name, &v);
	if (ret)
		return umctl_fail(name, ret);
	put_value(u, j, name, v);
	return EX_DONE;
}

int cmd_get(struct umctl *u, int argc, char **argv)
{
	struct ut_json j, *jp = NULL;
	int ret;

	if (argc > 2)
		ut_die_usage("usage: get [KNOB]");
	if (argc == 1 || u->json)
		jp = &j;	/* text: "name value" lines when listing */
	if (u->json) {
		ut_json_init(&j, stdout);
		ut_json_obj_begin(&j, NULL);
	}
	ret = argc == 1 ? get_all(u, jp) : get_one(u, jp, argv[1]);
	if (u->json) {
		ut_json_obj_end(&j);
		ut_json_finish(&j);
	}
	return ret;
}

/* ---- knobs ---------------------------------------------------------------- */

int cmd_knobs(struct umctl *u, int argc, char **argv)
{
	if (argc > 1)
		ut_die_usage("knobs: unexpected argument '%s'", argv[1]);
	ut_knobs_list(stdout);
	return fflush(stdout) ? EX_RUNTIME : EX_DONE;
}

/* ---- inject --------------------------------------------------------------- */

static bool is_level(const char *s)
{
	size_t i;

	for (i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
		if (!strcmp(s, levels[i]))
			return true;
	return false;
}

static int inject_write(const struct umctl *u, const char *cmd)
{
	char what[128];
	int ret = umctl_write(u, "inject", cmd, true);

	snprintf(what, sizeof(what), "inject '%s'", cmd);
	return ret ? umctl_fail(what, ret) : EX_DONE;
}

/* "clear": every node and GPU back to its measured level; all are tried. */
static int inject_clear_all(const struct umctl *u)
{
	struct ut_umm s;
	char cmd[48];
	size_t i;
	int ret = ut_umm_read(u->root, &s), rc = EX_DONE;

	if (ret) {
		ut_umm_warn(u->root, s.failed[0] ? s.failed : "inject", ret);
		ut_umm_free(&s);
		return EX_RUNTIME;
	}
	for (i = 0; i < s.nnodes; i++) {
		snprintf(cmd, sizeof(cmd), "node %u clear", s.nodes[i].id);
		if (inject_write(u, cmd))
			rc = EX_RUNTIME;
	}
	for (i = 0; i < s.ngpus; i++) {
		snprintf(cmd, sizeof(cmd), "gpu %u clear", s.gpus[i].id);
		if (inject_write(u, cmd))
			rc = EX_RUNTIME;
	}
	ut_umm_free(&s);
	return rc;
}

/* "node N LEVEL|clear|shrink SIZE" and "gpu N LEVEL|clear" as words. */
static void inject_source(int argc, char **argv, char *cmd, size_t len,
			  unsigned int *idp)
{
	bool node = !strcmp(argv[1], "node");
	uint64_t id, bytes;

	if (argc < 4)
		ut_die_usage("inject %s: want %s N LEVEL|clear%s", argv[1],
			     argv[1], node ? "|shrink SIZE" : "");
	if (ut_parse_u64(argv[2], 0, node ? 65535 : UT_UMM_MAX_GPUS - 1, &id))
		ut_die_usage("inject: bad %s id '%s'", argv[1], argv[2]);
	*idp = (unsigned int)id;
	if (node && !strcmp(argv[3], "shrink")) {
		if (argc != 5 || ut_parse_size(argv[4], &bytes) || !bytes)
			ut_die_usage("inject node N shrink SIZE: bad or missing SIZE");
		snprintf(cmd, len, "node %" PRIu64 " shrink %" PRIu64, id,
			 bytes);
		return;
	}
	if (argc != 4)
		ut_die_usage("inject: unexpected argument '%s'", argv[4]);
	if (strcmp(argv[3], "clear") && !is_level(argv[3]))
		ut_die_usage("inject: bad level '%s' (normal, low, medium, critical, clear)",
			     argv[3]);
	snprintf(cmd, len, "%s %" PRIu64 " %s", argv[1], id, argv[3]);
}

int cmd_inject(struct umctl *u, int argc, char **argv)
{
	unsigned int id = 0;
	char cmd[96];
	int ret;

	if (argc < 2)
		ut_die_usage("usage: inject node|gpu N LEVEL|clear, inject oom, inject clear");
	if (!strcmp(argv[1], "node") || !strcmp(argv[1], "gpu")) {
		inject_source(argc, argv, cmd, sizeof(cmd), &id);
	} else if (argc == 2 && (!strcmp(argv[1], "oom") ||
				 !strcmp(argv[1], "clear"))) {
		snprintf(cmd, sizeof(cmd), "%s", argv[1]);
	} else {
		ut_die_usage("inject: unknown '%s' (node, gpu, oom, clear)",
			     argv[1]);
	}
	ret = umctl_need_module(u);
	if (ret)
		return ret;
	if (!strcmp(cmd, "clear"))
		return inject_clear_all(u);
	if (!strcmp(argv[1], "node") || !strcmp(argv[1], "gpu")) {
		ret = check_dir(u, argv[1], id);
		if (ret)
			return ret;
	}
	return inject_write(u, cmd);
}
