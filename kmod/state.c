// SPDX-License-Identifier: GPL-2.0
/*
 * The module's state and the knobs' defaults: the bottom layer, which
 * every other file reads and nothing here calls out of.
 */
#include "umm_internal.h"

struct umm_state umm = {
	.mutex		= __MUTEX_INITIALIZER(umm.mutex),
	.lock		= __SPIN_LOCK_UNLOCKED(umm.lock),
	.clients	= LIST_HEAD_INIT(umm.clients),
	.levels		= RB_ROOT,
	.unready	= LIST_HEAD_INIT(umm.unready),
	.enabled	= true,
	.interval_ms	= 100,
	.queue_len	= 256,
	.ring_bytes_max	= 64ULL << 20,
	.hysteresis_bp	= 200,
	.min_interval_ms = 100,
	.repeat_ms	= 1000,
	.oom_wait_ms	= 1000,
	.cg_low_bp	= 2000,
	.cg_medium_bp	= 1000,
	.cg_critical_bp	= 500,
	.cgroups	= LIST_HEAD_INIT(umm.cgroups),
};
