// SPDX-License-Identifier: GPL-2.0
/*
 * The inject file, a test aid: hold a node or GPU at a level, or act as if
 * reclaim or the OOM killer had called, so that clients and tests can see
 * every event without real pressure. It sits above the sources it drives
 * (monitor.c, reclaim.c) and nothing on their paths calls it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "umm_internal.h"

/* "node <nid> <level>|clear|shrink <bytes>" */
static int umm_inject_node(int argc, char **argv)
{
	struct umm_node *n;
	u32 nid;
	u64 bytes;
	int level;

	if (argc < 3 || umm_parse_u32(argv[1], &nid) || nid >= nr_node_ids ||
	    !umm.nodes[nid])
		return -EINVAL;
	n = umm.nodes[nid];
	if (!strcmp(argv[2], "shrink")) {
		if (argc != 4 || umm_parse_u64(argv[3], &bytes) || !bytes)
			return -EINVAL;
		umm_shrink_node(nid, bytes, true);
		return 0;
	}
	if (argc != 3)
		return -EINVAL;
	level = strcmp(argv[2], "clear") ? umm_level_parse(argv[2]) : 0;
	if (level < 0)
		return level;
	umm_node_hold(n, level);
	return 0;
}

/* "gpu <id> <level>|clear" */
static int umm_inject_gpu(int argc, char **argv)
{
	u32 id;
	int level;

	if (argc != 3 || umm_parse_u32(argv[1], &id) || id >= UMM_MAX_GPUS)
		return -EINVAL;
	level = strcmp(argv[2], "clear") ? umm_level_parse(argv[2]) : 0;
	if (level < 0)
		return level;
	umm_gpu_hold(umm.gpus[id], level);
	return 0;
}

/**
 * umm_inject() - carry out one line written to the inject file.
 * @cmd:	the line (NUL-terminated, a trailing newline is fine).
 *
 * Grammar (words separated by blanks; numbers decimal or 0x-hex)::
 *
 *	node <nid> normal|low|medium|critical	hold the node at a level
 *	node <nid> clear			back to the measured level
 *	node <nid> shrink <bytes>		as if reclaim asked for bytes
 *	gpu <id> normal|low|medium|critical	hold the GPU at a level
 *	gpu <id> clear				back to budget vs usage
 *	oom					as if the OOM killer ran
 *
 * Injected events carry UMM_EVENT_F_INJECTED and ignore the rate limit;
 * while the enabled knob is 0 they are not sent (the levels still change).
 *
 * Context: process context; takes umm.mutex.
 * Return: 0, -EINVAL for anything else, -ENOMEM.
 */
int umm_inject(const char *cmd)
{
	char **argv;
	int argc, ret = -EINVAL;

	argv = argv_split(GFP_KERNEL, cmd, &argc);
	if (!argv)
		return -ENOMEM;
	mutex_lock(&umm.mutex);
	if (argc == 1 && !strcmp(argv[0], "oom")) {
		umm_oom(true);
		ret = 0;
	} else if (argc >= 1 && !strcmp(argv[0], "node")) {
		ret = umm_inject_node(argc, argv);
	} else if (argc >= 1 && !strcmp(argv[0], "gpu")) {
		ret = umm_inject_gpu(argc, argv);
	}
	mutex_unlock(&umm.mutex);
	argv_free(argv);
	return ret;
}
