/* SPDX-License-Identifier: MIT */
/*
 * suballoc.h - what stats.c reads of the sub-allocators (suballoc.c).
 */
#ifndef UM_SUBALLOC_H
#define UM_SUBALLOC_H

#include "um.h"

struct um_context;

/*
 * Add the figures of ctx's sub-allocators to st's suballoc_* fields. Called
 * with ctx->lock held: takes the sub-allocators' registry lock and each
 * one's lock, which are never held while libum takes ctx->lock.
 */
void um__suballoc_stats(struct um_context *ctx, struct um_stats *st);

#endif /* UM_SUBALLOC_H */
