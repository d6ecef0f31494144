// SPDX-License-Identifier: GPL-2.0
/*
 * umm.ko: memory pressure events per NUMA node and per GPU budget
 * for cooperating processes (the um unified memory manager).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/build_bug.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/stddef.h>

#include "umm_internal.h"

static void umm_abi_checks(void)
{
	BUILD_BUG_ON(sizeof(struct umm_event) != UMM_EVENT_SIZE);
	BUILD_BUG_ON(offsetof(struct umm_event, seq) != 16);
	BUILD_BUG_ON(offsetof(struct umm_event, bytes_to_free) !=
		     offsetof(struct umm_event, lost));
	BUILD_BUG_ON(offsetof(struct umm_event, eta_ms) != 60);
	BUILD_BUG_ON(sizeof(struct umm_api) != 80);
	BUILD_BUG_ON(sizeof(struct umm_tier_report) != 24);
	BUILD_BUG_ON(sizeof(struct umm_report) != 24);
	BUILD_BUG_ON(sizeof(struct umm_ack) != 32);
	BUILD_BUG_ON(sizeof(struct umm_level_info) != 56);
	BUILD_BUG_ON(sizeof(struct umm_query) != 32);
}

static int __init umm_init(void)
{
	int ret;

	umm_abi_checks();
	umm.nodes = kcalloc(nr_node_ids, sizeof(*umm.nodes), GFP_KERNEL);
	if (!umm.nodes)
		return -ENOMEM;
	ret = umm_sysfs_init();
	if (ret)
		goto free_nodes;
	/*
	 * The nodes exist now: sample them before anything that reads the
	 * samples (shrinker, OOM notifier, /dev/umm) is registered.
	 */
	umm_monitor_init();
	umm_monitor_start();
	umm_debugfs_init();
	ret = umm_reclaim_init();
	if (ret)
		goto remove_debugfs;
	ret = umm_dev_init();
	if (ret)
		goto exit_reclaim;
	pr_info("API %d, %u node(s), %d GPU ids\n", UMM_API_VERSION,
		num_node_state(N_MEMORY), UMM_MAX_GPUS);
	return 0;

exit_reclaim:
	umm_reclaim_exit();
remove_debugfs:
	umm_debugfs_exit();
	umm_monitor_stop();
	umm_sysfs_exit();
free_nodes:
	kfree(umm.nodes);
	return ret;
}

static void __exit umm_exit(void)
{
	umm_dev_exit();
	umm_reclaim_exit();
	umm_debugfs_exit();
	umm_monitor_stop();
	umm_sysfs_exit();
	kfree(umm.nodes);
}

module_init(umm_init);
module_exit(umm_exit);

MODULE_DESCRIPTION("um: memory pressure events per NUMA node and GPU budget");
MODULE_AUTHOR("The um authors");
MODULE_LICENSE("GPL");
MODULE_VERSION(UMM_VERSION);
