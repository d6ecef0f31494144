/* SPDX-License-Identifier: MIT */
/*
 * pressure.c - the pressure loop: one thread per context, on io_uring or,
 * where a seccomp profile refuses io_uring, in poll(2) (pressure_queue.c).
 *
 * The thread keeps these requests armed on its queue:
 *  - each open source's (pressure_source.c): a read of /dev/umm (the
 *    module's read_iter honours IOCB_NOWAIT, so io_uring waits on poll
 *    instead of parking a worker thread in read()), or a POLLPRI poll of a
 *    PSI trigger, where PSI is the fallback;
 *  - a read of an eventfd, for stop and "books changed" nudges.
 * It wakes at least every report interval to send a REPORT when the
 * context's books changed, and to keep what the context holds off nodes
 * under pressure (pressure_shed.c). Events that ask for bytes are turned
 * into um_shed() toward the suggested destination, waited for, and ACKed.
 *
 * Losing the module (DISABLED, SHUTDOWN, end of file, a read error) only
 * changes the set of sources: the context keeps its regions and budgets,
 * the loop falls back to PSI where the kernel has it, and comes back to the
 * module on ENABLED.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "internal.h"
#include "um_numa.h"
#include "pressure_internal.h"
#include "util.h"

static struct um_pressure *pr_of(struct um_context *ctx)
{
	return ctx ? ctx->pressure : NULL;
}

/* ---- the loop ----------------------------------------------------------- */

static void arm_wake(struct um_pressure *pr)
{
	(void)um__pq_read(&pr->q, pr->wake_fd, &pr->wake_buf,
			  sizeof(pr->wake_buf), UM_PTAG_WAKE);
}

static void *loop(void *arg)
{
	struct um_pressure *pr = arg;
	int tick_ms = (int)(pr->report_ns / 1000000ull);
	uint64_t tag;
	int ret, res;

	um__thread_name("um-pressure");
	/*
	 * This thread is there to free a node: its own allocations (its
	 * malloc arena, page tables) must not wait in the kernel's allocator
	 * when the application bound its memory to that very node (seen in
	 * the VM rig: the loop silent for 1.2 s until the OOM kill).
	 */
	(void)um__numa_thread_prefer();
	for (int t = 0; t < UM_PTAG_SOURCES; t++)
		um__psources[t]->arm(pr);
	arm_wake(pr);
	um__pressure_report(pr, true);
	while (!atomic_load(&pr->stop)) {
		ret = um__pq_next(&pr->q, tick_ms, &tag, &res);
		if (ret == -ETIME) {
			um__pressure_keep_away(pr);
			if (pr->umm_fd >= 0)
				um__pressure_report(pr, false);
			continue;
		}
		if (ret == -EAGAIN)
			continue;
		if (ret)
			break;
		if (tag == UM_PTAG_WAKE) {
			if (atomic_load(&pr->stop))
				goto out;
			arm_wake(pr);
		} else if (tag < UM_PTAG_SOURCES) {
			um__psources[tag]->done(pr, res);
			/* a source opened meanwhile (a fallback) is armed */
			for (int t = 0; t < UM_PTAG_SOURCES; t++)
				um__psources[t]->arm(pr);
		}
		um__pressure_keep_away(pr);
		if (atomic_load(&pr->dirty))
			um__pressure_report(pr, false);
	}
out:
	return NULL;
}

/* ---- start / stop ------------------------------------------------------- */

static void close_sources(struct um_pressure *pr)
{
	for (int t = 0; t < UM_PTAG_SOURCES; t++)
		um__psources[t]->close(pr);
}

static void pr_free(struct um_pressure *pr)
{
	close_sources(pr);
	if (pr->wake_fd >= 0)
		close(pr->wake_fd);
	pthread_mutex_destroy(&pr->st_lock);
	free(pr);
}

int um__pressure_start(struct um_context *ctx)
{
	struct um_pressure *pr;
	int ret;

	if (!ctx || ctx->pressure)
		return -EINVAL;
	if (!ctx->set.pressure) {
		um__log(ctx, UM_LOG_INFO,
			"pressure: LIBUM_PRESSURE=0; sources: own budgets");
		return 0;
	}
	pr = calloc(1, sizeof(*pr));
	if (!pr)
		return -ENOMEM;
	pr->ctx = ctx;
	pr->report = um__pressure_report;
	pr->umm_fd = pr->psi_fd = pr->wake_fd = -1;
	pr->cgw.current_fd = pr->cgw.statm_fd = pr->cgw.psi_fd = -1;
	pr->home_orig = -1;
	pthread_mutex_init(&pr->st_lock, NULL);
	pr->report_ns = (uint64_t)ctx->set.report_ms * 1000000ull;

	pr->wake_fd = eventfd(0, EFD_CLOEXEC);
	if (pr->wake_fd < 0) {
		ret = -errno;
		goto err;
	}
	ret = um__pq_init(&pr->q);
	if (ret) {
		/* a container's seccomp profile (Docker's, containerd's):
		 * the same loop, waiting in poll(2) */
		um__log(ctx, UM_LOG_INFO,
			"pressure: io_uring is refused here (%s; a seccomp profile?): the pressure loop waits in poll(2) instead",
			strerror(-ret));
	}
	um__pressure_open_sources(pr);
	ctx->pressure = pr;
	/* never uninstalled: um__pressure_notify() checks ctx->pressure */
	ctx->books_changed = um__pressure_notify;
	ret = pthread_create(&pr->thread, NULL, loop, pr);
	if (ret) {
		ctx->pressure = NULL;
		um__pq_exit(&pr->q);
		ret = -ret;
		goto err;
	}
	pr->started = true;
	return 0;
err:
	pr_free(pr);
	return ret;
}

static void wake(struct um_pressure *pr)
{
	uint64_t one = 1;
	ssize_t n = write(pr->wake_fd, &one, sizeof(one));

	(void)n;
}

void um__pressure_stop(struct um_context *ctx)
{
	struct um_pressure *pr = pr_of(ctx);

	if (!pr)
		return;
	atomic_store(&pr->stop, true);
	wake(pr);
	if (pr->started)
		pthread_join(pr->thread, NULL);
	um__pq_exit(&pr->q);
	ctx->pressure = NULL;
	pr_free(pr);
}

void um__pressure_forget(struct um_context *ctx)
{
	struct um_pressure *pr = pr_of(ctx);

	if (!pr)
		return;
	um__pq_exit(&pr->q);
	close_sources(pr);
	if (pr->wake_fd >= 0)
		close(pr->wake_fd);
	/* st_lock may be a copy of a lock a parent thread held: not touched */
	ctx->pressure = NULL;
	free(pr);
}

void um__pressure_notify(struct um_context *ctx)
{
	struct um_pressure *pr = pr_of(ctx);

	if (!pr)
		return;
	if (!atomic_exchange(&pr->dirty, true))
		wake(pr);
}

unsigned int um__pressure_sources(struct um_context *ctx)
{
	struct um_pressure *pr = pr_of(ctx);

	return pr ? atomic_load(&pr->sources) : UM_PSRC_BUDGET;
}

int um__pressure_stats(struct um_context *ctx, struct um_pressure_stats *st)
{
	struct um_pressure *pr = pr_of(ctx);

	if (!st)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	if (!pr) {
		st->sources = UM_PSRC_BUDGET;
		return 0;
	}
	pthread_mutex_lock(&pr->st_lock);
	*st = pr->st;
	pthread_mutex_unlock(&pr->st_lock);
	return 0;
}
