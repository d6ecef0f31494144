/* SPDX-License-Identifier: MIT */
/* pressure.c - placeholder until the event loop lands: budgets only. */
#include <errno.h>
#include <string.h>

#include "pressure.h"

int um__pressure_start(struct um_context *ctx)
{
	(void)ctx;
	return 0;
}

void um__pressure_stop(struct um_context *ctx)
{
	(void)ctx;
}

void um__pressure_notify(struct um_context *ctx)
{
	(void)ctx;
}

unsigned int um__pressure_sources(struct um_context *ctx)
{
	(void)ctx;
	return UM_PSRC_BUDGET;
}

int um__pressure_stats(struct um_context *ctx, struct um_pressure_stats *st)
{
	(void)ctx;
	memset(st, 0, sizeof(*st));
	st->sources = UM_PSRC_BUDGET;
	return 0;
}
