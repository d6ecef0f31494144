/* SPDX-License-Identifier: MIT */
/*
 * knobs.h - umm.ko's knobs as the tools know them: one row per knob,
 *
 *   X(name, kind, min, max, default, floor)
 *
 * in the list of the knob's directory (ROOT/kernel/mm/umm, nodes/node<N>/,
 * gpus/gpu<N>/, cgroup/). umctl checks values against it, prints status,
 * help and "umctl knobs" from it, ut_umm_read reads the files it names,
 * and the fake tree of the tools' tests (fakeumm.sh, through ut-knobs) is
 * made from it.
 *
 * kmod/sysfs.c is the truth: check-knobs.py, run by every build of
 * tools/common, compares the rows with what the module's store functions
 * accept and fail at any difference, naming the knob. Adding a knob to the
 * module is adding its row here (and to the ABI document).
 *
 *   kind   BOOL: boolean words or 0/1 (umm_parse_bool); NUM: a number; WM: a watermark in
 *          basis points (a node's, or the watched cgroups'), the three of
 *          its directory kept low_bp > medium_bp > critical_bp; SIZE: bytes,
 *          K/M/G/T suffixes allowed
 *   min, max  what the module accepts, inclusive
 *   default   the value at load
 *   floor     SIZE only: a non-zero value under it is refused without
 *             --force (a unit forgotten: "20" for "20G"); 0 for none
 */
#ifndef UT_KNOBS_H
#define UT_KNOBS_H

#include <stdint.h>

#define UT_KNOBS_GLOBAL(X)                                               \
	X(enabled,               BOOL, 0,    1,          1,           0) \
	X(interval_ms,           NUM,  10,   60000,      100,         0) \
	X(queue_len,             NUM,  4,    65536,      256,         0) \
	X(ring_bytes_max,        SIZE, 4096, 1ull << 40, 64ull << 20, 0) \
	X(hysteresis_bp,         NUM,  0,    5000,       200,         0) \
	X(event_min_interval_ms, NUM,  0,    60000,      100,         0) \
	X(repeat_interval_ms,    NUM,  0,    3600000,    1000,        0) \
	X(oom_wait_ms,           NUM,  0,    10000,      1000,        0)

#define UT_KNOBS_NODE(X)                                                 \
	X(low_bp,                WM,   0,    10000,      2000,        0) \
	X(medium_bp,             WM,   0,    10000,      1000,        0) \
	X(critical_bp,           WM,   0,    10000,      500,         0)

#define UT_KNOBS_GPU(X)                                                  \
	X(budget_bytes,          SIZE, 0,    UINT64_MAX, 0,    1ull << 20)

/* Thresholds of every watched memory cgroup: one directory, no id. */
#define UT_KNOBS_CGROUP(X)                                               \
	X(low_bp,                WM,   0,    10000,      2000,        0) \
	X(medium_bp,             WM,   0,    10000,      1000,        0) \
	X(critical_bp,           WM,   0,    10000,      500,         0)

#endif /* UT_KNOBS_H */
