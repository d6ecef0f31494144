/* SPDX-License-Identifier: MIT */
/*
 * core.c - logging and events, the bottom of the context's own code: every
 * layer above logs and queues events here (um__exit() delivers them).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

/* ---- logging ---------------------------------------------------------- */

/*
 * Without a log callback a line goes to stderr: the one place libum
 * prints, so that a failure is seen by default (only ERR lines unless
 * LIBUM_LOG_LEVEL asks for more, or off; see libum(7)). One fprintf, so a
 * line is one write even among threads.
 */
void um__log_stderr(int level, const char *msg)
{
	const char *tag = level <= UM_LOG_ERR ? "error" :
			  level == UM_LOG_WARN ? "warning" :
			  level <= UM_LOG_INFO ? "info" : "debug";

	fprintf(stderr, "libum: %s: %s\n", tag, msg);
}

void um__vlog(struct um_context *ctx, int level, const char *fmt, va_list ap)
{
	char buf[512];

	if (level > ctx->log_level)
		return;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	if (ctx->log)
		ctx->log(ctx->log_arg, level, buf);
	else
		um__log_stderr(level, buf);
}

void um__log(struct um_context *ctx, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	um__vlog(ctx, level, fmt, ap);
	va_end(ap);
}

void um__event(struct um_context *ctx, int type, unsigned int level,
	       struct um_region *r, um_tier_t from, um_tier_t to,
	       uint64_t bytes, int error, uint64_t ns)
{
	struct um_event *ev;

	ctx->books.events[type]++;
	if (!ctx->ev_fn)
		return;
	if (ctx->evq_n == ctx->evq_cap) {
		uint32_t cap = ctx->evq_cap ? ctx->evq_cap * 2 : 16;
		struct um_event *n;

		/* a runaway queue means nobody exits: drop, but count */
		if (cap > 65536 ||
		    !(n = realloc(ctx->evq, cap * sizeof(*n)))) {
			ctx->books.events_dropped++;
			return;
		}
		ctx->evq = n;
		ctx->evq_cap = cap;
	}
	ev = &ctx->evq[ctx->evq_n++];
	*ev = (struct um_event){
		.size = sizeof(*ev),
		.type = (uint32_t)type,
		.level = level,
		.region = r ? r->handle : 0,
		.from = from,
		.to = to,
		.bytes = bytes,
		.error = error,
		.ns = ns,
	};
}
