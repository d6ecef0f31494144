/* SPDX-License-Identifier: MIT */
/*
 * pressure_queue.c - the pressure loop's requests: on io_uring, or in
 * poll(2) where io_uring is refused.
 *
 * The loop keeps at most one request per tag (enum um_pressure_tag) in
 * flight: a read, a poll or a timeout, and takes their completions one at
 * a time. On io_uring they are the ring's SQEs and CQEs. Docker's and
 * containerd's default seccomp profiles refuse io_uring_setup; there the
 * same requests wait in poll(2) on their descriptors, and the read is made
 * once the descriptor is readable: the same completions, in the same
 * order of arming, so the sources cannot tell the two apart.
 *
 * A POLLPRI of a PSI trigger is reported once per event (poll consumes
 * it): every descriptor that poll(2) finds ready is remembered until its
 * completion is taken, not polled again.
 */
#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "pressure_internal.h"
#include "util.h"

#define NTAGS (UM_PTAG_WAKE + 1)

/* ---- io_uring ----------------------------------------------------------- */

static bool ring_read(struct um_pqueue *q, int fd, void *buf,
		      unsigned int len, uint64_t tag)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);

	if (!sqe)
		return false;
	io_uring_prep_read(sqe, fd, buf, len, 0);
	io_uring_sqe_set_data64(sqe, tag);
	return true;
}

static bool ring_poll(struct um_pqueue *q, int fd, short events,
		      uint64_t tag)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);

	if (!sqe)
		return false;
	io_uring_prep_poll_add(sqe, fd, (unsigned int)events);
	io_uring_sqe_set_data64(sqe, tag);
	return true;
}

static bool ring_timeout(struct um_pqueue *q, uint64_t ns, uint64_t tag)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);
	struct __kernel_timespec *ts = &q->req[tag].ts;

	if (!sqe)
		return false;
	/* read at submission: kept with the tag's request until then */
	ts->tv_sec = (long long)(ns / 1000000000ull);
	ts->tv_nsec = (long long)(ns % 1000000000ull);
	io_uring_prep_timeout(sqe, ts, 0, 0);
	io_uring_sqe_set_data64(sqe, tag);
	return true;
}

static void ring_cancel(struct um_pqueue *q, uint64_t tag)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);

	if (!sqe)
		return;
	io_uring_prep_cancel64(sqe, tag, 0);
	/* not 0: that is UM_PTAG_UMM, whose read would seem to end */
	io_uring_sqe_set_data64(sqe, UM_PTAG_CANCEL);
}

/*
 * Wait for a completion in poll(2) on the ring's fd rather than inside
 * io_uring_enter: same wakeups, but tools that must know which system calls
 * block (valgrind serialises threads and would otherwise stall every other
 * thread of the process here) see an ordinary poll. Returns 0 when a
 * completion is ready, -ETIME after timeout_ms.
 */
static int ring_wait(struct um_pqueue *q, int timeout_ms)
{
	struct pollfd pfd = { .fd = q->ring.ring_fd, .events = POLLIN };
	int ret;

	ret = io_uring_submit(&q->ring);
	if (ret < 0 && ret != -EBUSY && ret != -EAGAIN)
		return ret;
	if (io_uring_cq_ready(&q->ring))
		return 0;
	ret = poll(&pfd, 1, timeout_ms);
	if (ret < 0)
		return errno == EINTR ? -ETIME : -errno;
	return ret ? 0 : -ETIME;
}

static int ring_next(struct um_pqueue *q, int timeout_ms, uint64_t *tag,
		     int *res)
{
	struct io_uring_cqe *cqe;
	int ret = ring_wait(q, timeout_ms);

	if (ret)
		return ret;
	ret = io_uring_peek_cqe(&q->ring, &cqe);
	if (ret == -EINTR)
		return -EAGAIN;
	if (ret)
		return ret;
	*tag = io_uring_cqe_get_data64(cqe);
	*res = cqe->res;
	io_uring_cqe_seen(&q->ring, cqe);
	return 0;
}

/* ---- poll(2) ------------------------------------------------------------ */

static int due_ms(uint64_t due_ns, uint64_t now)
{
	uint64_t ms = due_ns > now ? (due_ns - now + 999999) / 1000000 : 0;

	return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

/*
 * Polls what is armed for at most timeout_ms (0: a look) and marks the
 * requests poll(2) found ready, or whose time came. true if any is.
 */
static bool poll_collect(struct um_pqueue *q, int timeout_ms)
{
	struct pollfd pfd[NTAGS];
	unsigned int tag_of[NTAGS], n = 0;
	uint64_t now = um__now_ns();
	bool any = false;

	for (unsigned int t = 0; t < NTAGS; t++) {
		struct um_preq *r = &q->req[t];

		if (r->kind == UM_PREQ_NONE)
			continue;
		if (r->ready) {
			timeout_ms = 0;
			continue;
		}
		if (r->kind == UM_PREQ_TIMEOUT) {
			if (due_ms(r->due_ns, now) < timeout_ms)
				timeout_ms = due_ms(r->due_ns, now);
			continue;
		}
		pfd[n] = (struct pollfd){ .fd = r->fd, .events = r->events };
		tag_of[n++] = t;
	}
	if (poll(pfd, n, timeout_ms) > 0) {
		for (unsigned int i = 0; i < n; i++) {
			if (!pfd[i].revents)
				continue;
			q->req[tag_of[i]].ready = true;
			q->req[tag_of[i]].revents = pfd[i].revents;
		}
	}
	now = um__now_ns();
	for (unsigned int t = 0; t < NTAGS; t++) {
		struct um_preq *r = &q->req[t];

		if (r->kind == UM_PREQ_TIMEOUT && r->due_ns <= now)
			r->ready = true;
		any |= r->kind != UM_PREQ_NONE && r->ready;
	}
	return any;
}

/* The completion of a ready request, as io_uring would give it. */
static int poll_complete(struct um_preq *r)
{
	ssize_t n;

	switch (r->kind) {
	case UM_PREQ_READ:
		n = read(r->fd, r->buf, r->len);
		return n < 0 ? -errno : (int)n;
	case UM_PREQ_POLL:
		return r->revents;
	case UM_PREQ_TIMEOUT:
		return -ETIME;
	case UM_PREQ_CANCELLED:
		return -ECANCELED;
	default:
		return -EINVAL;
	}
}

/* Ready requests in tag order, from the one after the last taken. */
static int poll_next(struct um_pqueue *q, int timeout_ms, uint64_t *tag,
		     int *res)
{
	uint64_t end = um__now_ns() + (uint64_t)timeout_ms * 1000000ull;

	for (;;) {
		for (unsigned int i = 1; i <= NTAGS; i++) {
			unsigned int t = (q->last + i) % NTAGS;
			struct um_preq *r = &q->req[t];

			if (r->kind == UM_PREQ_NONE || !r->ready)
				continue;
			*res = poll_complete(r);
			*tag = t;
			q->last = t;
			*r = (struct um_preq){ .kind = UM_PREQ_NONE };
			return 0;
		}
		if (poll_collect(q, due_ms(end, um__now_ns())))
			continue;
		if (um__now_ns() >= end)
			return -ETIME;
	}
}

static bool poll_arm(struct um_pqueue *q, uint64_t tag,
		     const struct um_preq *r)
{
	if (tag >= NTAGS || q->req[tag].kind != UM_PREQ_NONE)
		return false;
	q->req[tag] = *r;
	return true;
}

/* ---- the interface ------------------------------------------------------ */

int um__pq_init(struct um_pqueue *q)
{
	int ret = io_uring_queue_init(8, &q->ring, 0);

	memset(q->req, 0, sizeof(q->req));
	q->last = NTAGS - 1;
	q->on_ring = !ret;
	return ret;
}

void um__pq_exit(struct um_pqueue *q)
{
	if (q->on_ring)
		io_uring_queue_exit(&q->ring);
	q->on_ring = false;
}

bool um__pq_read(struct um_pqueue *q, int fd, void *buf, unsigned int len,
		 uint64_t tag)
{
	if (q->on_ring)
		return ring_read(q, fd, buf, len, tag);
	return poll_arm(q, tag, &(struct um_preq){ .kind = UM_PREQ_READ,
			.fd = fd, .buf = buf, .len = len, .events = POLLIN });
}

bool um__pq_poll(struct um_pqueue *q, int fd, short events, uint64_t tag)
{
	if (q->on_ring)
		return ring_poll(q, fd, events, tag);
	return poll_arm(q, tag, &(struct um_preq){ .kind = UM_PREQ_POLL,
			.fd = fd, .events = events });
}

bool um__pq_timeout(struct um_pqueue *q, uint64_t ns, uint64_t tag)
{
	if (q->on_ring)
		return ring_timeout(q, ns, tag);
	return poll_arm(q, tag, &(struct um_preq){ .kind = UM_PREQ_TIMEOUT,
			.due_ns = um__now_ns() + ns });
}

void um__pq_cancel(struct um_pqueue *q, uint64_t tag)
{
	if (q->on_ring)
		ring_cancel(q, tag);
	else if (tag < NTAGS && q->req[tag].kind != UM_PREQ_NONE)
		q->req[tag] = (struct um_preq){ .kind = UM_PREQ_CANCELLED,
						.ready = true };
}

void um__pq_submit(struct um_pqueue *q)
{
	if (q->on_ring)
		io_uring_submit(&q->ring);
}

bool um__pq_ready(struct um_pqueue *q)
{
	return q->on_ring ? io_uring_cq_ready(&q->ring) > 0 :
			    poll_collect(q, 0);
}

int um__pq_next(struct um_pqueue *q, int timeout_ms, uint64_t *tag, int *res)
{
	return q->on_ring ? ring_next(q, timeout_ms, tag, res) :
			    poll_next(q, timeout_ms, tag, res);
}
