// SPDX-License-Identifier: GPL-2.0
/*
 * Description: reading /dev/umm. Whole 64-byte records only (a shorter
 * buffer is -EINVAL and loses nothing), -EAGAIN when empty and non-blocking,
 * blocking reads and poll() wake up when a record is queued, a blocked read
 * is interruptible, and an io_uring read completes without an io-wq worker
 * thread (read_iter honours IOCB_NOWAIT, so io_uring arms poll instead).
 *
 * Records come from toggling the enabled knob (DISABLED/ENABLED go to every
 * client, whatever it reported), so these tests need no memory pressure.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"

/* One DISABLED record to every client; enabled is 1 again afterwards, which
 * queues an ENABLED record as well. */
static int toggle(void)
{
	int ret = attr_write("enabled", "0");

	if (ret)
		return ret;
	return attr_write("enabled", "1");
}

/* Wait until thread @tid sleeps (state S) in the kernel. */
static int wait_sleeping(pid_t tid)
{
	char path[64], buf[256], *p;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	for (int i = 0; i < 20000; i++) {
		if (attr_read(path, buf, sizeof(buf)) > 0) {
			p = strrchr(buf, ')');
			if (p && p[1] == ' ' && p[2] == 'S')
				return 0;
		}
		usleep(500);
	}
	return -ETIMEDOUT;
}

FIXTURE(client) {
	int fd;
};

FIXTURE_SETUP(client)
{
	self->fd = umm_client("read", 0, 0, 0);
	ASSERT_LE(0, self->fd) TH_LOG("client: %s", strerror(-self->fd));
	ASSERT_EQ(0, attr_write("enabled", "1"));
	umm_drain(self->fd);
}

FIXTURE_TEARDOWN(client)
{
	attr_write("enabled", "1");
	close(self->fd);
}

TEST_F(client, record_fields)
{
	struct umm_event ev;
	uint64_t t0, t1;

	t0 = now_ns();
	ASSERT_EQ(0, attr_write("enabled", "0"));
	t1 = now_ns();
	ASSERT_EQ(1, umm_next_event(self->fd, &ev, 10000));
	EXPECT_EQ(UMM_EVENT_DISABLED, ev.type);
	EXPECT_EQ(UMM_EVENT_SIZE, ev.size);
	EXPECT_EQ(UMM_TIER_NONE, ev.tier_type);
	EXPECT_EQ(0, ev.tier_id);
	EXPECT_EQ(0, ev.flags & UMM_EVENT_F_ACK);
	EXPECT_EQ(0, ev.bytes_to_free);
	EXPECT_LE(1, ev.seq);
	EXPECT_LE(t0, ev.ts_ns) TH_LOG("ts_ns is CLOCK_MONOTONIC");
	EXPECT_GE(t1, ev.ts_ns);
	ASSERT_EQ(0, attr_write("enabled", "1"));
	ASSERT_EQ(1, umm_next_event(self->fd, &ev, 10000));
	EXPECT_EQ(UMM_EVENT_ENABLED, ev.type);
}

TEST_F(client, seq_starts_at_one_and_counts)
{
	struct umm_event ev;
	int fd = umm_client("fresh", 0, 0, 0);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, toggle());
	ASSERT_EQ(1, umm_next_event(fd, &ev, 10000));
	EXPECT_EQ(1, ev.seq);
	ASSERT_EQ(1, umm_next_event(fd, &ev, 10000));
	EXPECT_EQ(2, ev.seq);
	close(fd);
}

TEST_F(client, short_buffer_einval_loses_nothing)
{
	char buf[UMM_EVENT_SIZE * 2];
	struct umm_event ev;

	ASSERT_EQ(0, attr_write("enabled", "0"));
	ASSERT_EQ(1, poll(&(struct pollfd){ .fd = self->fd,
					     .events = POLLIN }, 1, 10000));
	EXPECT_EQ(-1, read(self->fd, buf, UMM_EVENT_SIZE - 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, read(self->fd, buf, 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, read(self->fd, buf, 0));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(UMM_EVENT_SIZE, read(self->fd, &ev, sizeof(ev)));
	EXPECT_EQ(UMM_EVENT_DISABLED, ev.type);
}

TEST_F(client, nonblocking_empty_eagain)
{
	struct umm_event ev;
	int fd = umm_client("nonblock", 0, 0, O_NONBLOCK);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, read(fd, &ev, sizeof(ev)));
	EXPECT_EQ(EAGAIN, errno);
	/* and the blocking file, switched to O_NONBLOCK with fcntl */
	ASSERT_EQ(0, fcntl(self->fd, F_SETFL, O_NONBLOCK));
	EXPECT_EQ(-1, read(self->fd, &ev, sizeof(ev)));
	EXPECT_EQ(EAGAIN, errno);
	close(fd);
}

TEST_F(client, whole_records_only)
{
	char buf[UMM_EVENT_SIZE * 4];
	struct umm_event *ev = (struct umm_event *)buf;

	ASSERT_EQ(0, toggle());		/* DISABLED, ENABLED */
	ASSERT_EQ(0, attr_write("enabled", "0"));	/* DISABLED */
	ASSERT_EQ(0, attr_write("enabled", "1"));	/* ENABLED */
	/* room for 2.5 records: 2 are returned */
	ASSERT_EQ(2 * UMM_EVENT_SIZE,
		  read(self->fd, buf, 2 * UMM_EVENT_SIZE + UMM_EVENT_SIZE / 2));
	EXPECT_EQ(UMM_EVENT_DISABLED, ev[0].type);
	EXPECT_EQ(UMM_EVENT_ENABLED, ev[1].type);
	EXPECT_EQ(ev[0].seq + 1, ev[1].seq);
	/* room for 4, 2 left: both */
	ASSERT_EQ(2 * UMM_EVENT_SIZE, read(self->fd, buf, sizeof(buf)));
	EXPECT_EQ(UMM_EVENT_DISABLED, ev[0].type);
	EXPECT_EQ(UMM_EVENT_ENABLED, ev[1].type);
	EXPECT_EQ(0, umm_drain(self->fd));
}

struct waiter {
	int fd;
	int use_poll;
	pid_t tid;
	volatile int started;
	ssize_t ret;
	int err;
	short revents;
	struct umm_event ev;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;

	w->tid = (pid_t)syscall(SYS_gettid);
	__atomic_store_n(&w->started, 1, __ATOMIC_RELEASE);
	if (w->use_poll) {
		struct pollfd p = { .fd = w->fd, .events = POLLIN };

		w->ret = poll(&p, 1, -1);
		w->revents = p.revents;
	} else {
		w->ret = read(w->fd, &w->ev, sizeof(w->ev));
	}
	w->err = errno;
	return NULL;
}

static int start_waiter(pthread_t *t, struct waiter *w)
{
	if (pthread_create(t, NULL, wait_thread, w))
		return -1;
	while (!__atomic_load_n(&w->started, __ATOMIC_ACQUIRE))
		usleep(100);
	return wait_sleeping(w->tid);
}

TEST_F(client, poll_wakes_on_event)
{
	struct waiter w = { .fd = self->fd, .use_poll = 1 };
	pthread_t t;

	ASSERT_EQ(0, start_waiter(&t, &w)) TH_LOG("poll did not block");
	ASSERT_EQ(0, attr_write("enabled", "0"));
	pthread_join(t, NULL);
	EXPECT_EQ(1, w.ret);
	EXPECT_TRUE(w.revents & POLLIN);
	EXPECT_FALSE(w.revents & (POLLERR | POLLHUP));
}

TEST_F(client, blocking_read_wakes_on_event)
{
	struct waiter w = { .fd = self->fd };
	pthread_t t;

	ASSERT_EQ(0, start_waiter(&t, &w)) TH_LOG("read did not block");
	ASSERT_EQ(0, attr_write("enabled", "0"));
	pthread_join(t, NULL);
	ASSERT_EQ(UMM_EVENT_SIZE, w.ret) TH_LOG("errno %d", w.err);
	EXPECT_EQ(UMM_EVENT_DISABLED, w.ev.type);
}

static void on_alarm(int sig)
{
	(void)sig;
}

TEST_F(client, blocked_read_is_interruptible)
{
	struct sigaction sa = { .sa_handler = on_alarm };	/* no restart */
	struct umm_event ev;

	ASSERT_EQ(0, sigaction(SIGALRM, &sa, NULL));
	alarm(1);
	EXPECT_EQ(-1, read(self->fd, &ev, sizeof(ev)));
	EXPECT_EQ(EINTR, errno);
}

static int uring_read(struct io_uring *ring, int fd, void *buf,
		      unsigned int len)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe)
		return -ENOSPC;
	/* offset -1: the file position, fine for a stream device */
	io_uring_prep_read(sqe, fd, buf, len, -1);
	return io_uring_submit(ring) == 1 ? 0 : -EIO;
}

TEST_F(client, io_uring_read_without_worker)
{
	struct __kernel_timespec ts = { .tv_sec = 10 };
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	struct umm_event ev;

	ASSERT_EQ(0, io_uring_queue_init(4, &ring, 0));
	ASSERT_EQ(0, uring_read(&ring, self->fd, &ev, sizeof(ev)));
	/* nothing queued: the read must be parked on poll, not completed */
	EXPECT_EQ(-EAGAIN, io_uring_peek_cqe(&ring, &cqe));
	ASSERT_EQ(0, attr_write("enabled", "0"));
	ASSERT_EQ(0, io_uring_wait_cqe_timeout(&ring, &cqe, &ts));
	EXPECT_EQ(UMM_EVENT_SIZE, cqe->res) TH_LOG("res %d", cqe->res);
	EXPECT_EQ(UMM_EVENT_DISABLED, ev.type);
	io_uring_cqe_seen(&ring, cqe);
	/* an io-wq worker (iou-wrk-<pid>) means read_iter blocked under
	 * IOCB_NOWAIT and io_uring punted; workers outlive the request */
	EXPECT_EQ(0, count_iou_workers());
	io_uring_queue_exit(&ring);
}

TEST_F(client, io_uring_read_ready_and_short)
{
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	struct umm_event ev[2];

	ASSERT_EQ(0, io_uring_queue_init(4, &ring, 0));
	ASSERT_EQ(0, attr_write("enabled", "0"));
	ASSERT_EQ(1, poll(&(struct pollfd){ .fd = self->fd,
					     .events = POLLIN }, 1, 10000));
	/* short buffer through io_uring: -EINVAL too, the record stays */
	ASSERT_EQ(0, uring_read(&ring, self->fd, ev, UMM_EVENT_SIZE - 8));
	ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
	EXPECT_EQ(-EINVAL, cqe->res);
	io_uring_cqe_seen(&ring, cqe);
	/* a record already queued: completes at once */
	ASSERT_EQ(0, uring_read(&ring, self->fd, ev, sizeof(ev)));
	ASSERT_EQ(0, io_uring_wait_cqe(&ring, &cqe));
	EXPECT_EQ(UMM_EVENT_SIZE, cqe->res);
	EXPECT_EQ(UMM_EVENT_DISABLED, ev[0].type);
	io_uring_cqe_seen(&ring, cqe);
	EXPECT_EQ(0, count_iou_workers());
	io_uring_queue_exit(&ring);
}

TEST_HARNESS_MAIN
