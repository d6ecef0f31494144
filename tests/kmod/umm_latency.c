// SPDX-License-Identifier: GPL-2.0
/*
 * Description: event latency benchmark, run in the VM. Two waiter threads
 * sleep on /dev/umm, one in a blocking read(), one in an io_uring read,
 * while the main thread writes "node <N> critical" to the inject file,
 * alternating between them event by event (so both modes share the
 * machine's conditions); each injected event wakes one waiter. Measured per
 * event, N times per mode:
 *   inject -> wakeup: from just before the write() to the inject file
 *                     (opened once) to the waiter running again with the
 *                     record in hand;
 *   event  -> wakeup: from the record's ts_ns (when the module raised it).
 * The floor, measured the same way in the same run: a third waiter sleeps
 * in read() on an eventfd that the main thread writes (write -> wakeup), in
 * turn with the other two, so that all three share the machine's
 * conditions. Prints p50/p99/max in microseconds for the three side by
 * side, the io_uring/read ratio and each mode's p99 over the eventfd p99,
 * as TAP (a test passes when every event arrived, in order, without loss,
 * and io_uring used no worker thread) or, with --json, as one JSON object.
 * Software emulation inflates every figure; compare the modes with each
 * other and with the eventfd floor, not with real hardware.
 *
 * Usage: umm_latency [-n N] [--json]
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "helpers.h"

enum mode { M_READ, M_URING, M_EVENTFD, M_NR };
static const char *const mode_name[M_NR] = { "read", "io_uring", "eventfd" };

struct bench {
	enum mode mode;
	int fd, n;
	pid_t tid;
	volatile int ready;		/* waiter is about to sleep */
	volatile int done;		/* events received */
	uint64_t *t_wake, *t_event;	/* per event */
	uint64_t last_seq;
	int bad;			/* lost, out of order, errors */
	int workers;			/* iou-wrk threads seen */
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static void got(struct bench *b, const struct umm_event *ev, ssize_t len)
{
	uint64_t t = now_ns();

	if (len != (ssize_t)sizeof(*ev) || ev->type != UMM_EVENT_PRESSURE ||
	    (b->last_seq && ev->seq != b->last_seq + 1))
		b->bad++;
	b->last_seq = ev->seq;
	b->t_wake[b->done] = t;
	b->t_event[b->done] = ev->ts_ns;
	__atomic_store_n(&b->done, b->done + 1, __ATOMIC_RELEASE);
}

/* The eventfd floor: no event record, the write is the event. */
static void got_eventfd(struct bench *b, uint64_t value, ssize_t len)
{
	uint64_t t = now_ns();

	if (len != (ssize_t)sizeof(value) || value != 1)
		b->bad++;
	b->t_wake[b->done] = t;	/* t_event is the write, set by the writer */
	__atomic_store_n(&b->done, b->done + 1, __ATOMIC_RELEASE);
}

static void *waiter(void *arg)
{
	struct bench *b = arg;
	struct io_uring ring;
	struct umm_event ev;

	b->tid = (pid_t)syscall(SYS_gettid);
	if (b->mode == M_URING && io_uring_queue_init(4, &ring, 0)) {
		b->bad = b->n;
		__atomic_store_n(&b->ready, -1, __ATOMIC_RELEASE);
		return NULL;
	}
	for (int i = 0; i < b->n; i++) {
		if (b->mode == M_EVENTFD) {
			uint64_t v = 0;
			ssize_t len;

			__atomic_store_n(&b->ready, i + 1, __ATOMIC_RELEASE);
			len = read(b->fd, &v, sizeof(v));
			got_eventfd(b, v, len);
		} else if (b->mode == M_READ) {
			__atomic_store_n(&b->ready, i + 1, __ATOMIC_RELEASE);
			got(b, &ev, read(b->fd, &ev, sizeof(ev)));
		} else {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			struct io_uring_cqe *cqe;

			io_uring_prep_read(sqe, b->fd, &ev, sizeof(ev), -1);
			io_uring_submit(&ring);
			__atomic_store_n(&b->ready, i + 1, __ATOMIC_RELEASE);
			if (io_uring_wait_cqe(&ring, &cqe)) {
				b->bad++;
				continue;
			}
			got(b, &ev, cqe->res);
			io_uring_cqe_seen(&ring, cqe);
		}
	}
	if (b->mode == M_URING) {
		b->workers = count_iou_workers();
		io_uring_queue_exit(&ring);
	}
	return NULL;
}

/* Is thread @tid asleep (state S)? 1, 0, or -1 when it is gone. */
static int sleeping(pid_t tid)
{
	char path[64], buf[256], *p;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	if (attr_read(path, buf, sizeof(buf)) <= 0)
		return -1;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

/*
 * Wake waiter @m with one write() each, so the modes compare like with
 * like: the inject file (opened once, in @inject_fd) for the /dev/umm
 * modes, the eventfd for the floor.
 */
static int poke(struct bench *b, int m, int inject_fd)
{
	static const char *const cmd[] = {
		[M_READ] = "node 0 critical", [M_URING] = "node 1 critical",
	};
	uint64_t one = 1;
	ssize_t len;

	if (m == M_EVENTFD)
		return write(b[m].fd, &one, sizeof(one)) == sizeof(one) ? 0
									 : -1;
	len = (ssize_t)strlen(cmd[m]);
	return pwrite(inject_fd, cmd[m], (size_t)len, 0) == len ? 0 : -1;
}

/*
 * With two CPUs or more: the injecting thread on CPU 0, every waiter on
 * CPU 1, so that each mode's wakeup crosses the same CPUs. Left to the
 * scheduler, where the emulated CPUs happened to put each waiter weighed
 * as much as the path (the p50 ratio to the floor moved from 0.5 to 4.5
 * between boots). Returns true when pinned.
 */
static bool pin_placement(pthread_attr_t *waiter_attr)
{
	cpu_set_t main_cpu, waiter_cpu;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return false;
	CPU_ZERO(&main_cpu);
	CPU_SET(0, &main_cpu);
	CPU_ZERO(&waiter_cpu);
	CPU_SET(1, &waiter_cpu);
	return !pthread_setaffinity_np(pthread_self(), sizeof(main_cpu),
				       &main_cpu) &&
	       !pthread_attr_setaffinity_np(waiter_attr, sizeof(waiter_cpu),
					    &waiter_cpu);
}

/*
 * The three modes at once, in turn event by event, so that they see the
 * same conditions (an emulated machine shared with other work is noisy):
 * the read client holds bytes on node 0, the io_uring client on node 1,
 * and each injection names one node, so it wakes one waiter.
 */
static int run(struct bench *b, uint64_t **t_inject, int inject_fd,
	       bool *pinned)
{
	pthread_attr_t attr;
	pthread_t t[M_NR];
	int started = 0;

	if (pthread_attr_init(&attr))
		return -1;
	*pinned = pin_placement(&attr);
	for (int m = 0; m < M_NR; m++, started++)
		if (pthread_create(&t[m], *pinned ? &attr : NULL, waiter,
				   &b[m]))
			break;
	pthread_attr_destroy(&attr);
	for (int i = 0; i < b[0].n && started == M_NR; i++) {
		for (int m = 0; m < M_NR; m++) {
			int r;

			while ((r = __atomic_load_n(&b[m].ready,
						    __ATOMIC_ACQUIRE)) < i + 1 &&
			       r >= 0)
				usleep(50);
			if (r < 0)
				continue;
			/* only inject once the waiter sleeps in the kernel */
			while (!(r = sleeping(b[m].tid)))
				usleep(50);
			if (r < 0) {	/* it ended early: bad records */
				b[m].bad++;
				continue;
			}
			t_inject[m][i] = now_ns();
			if (m == M_EVENTFD)
				b[m].t_event[i] = t_inject[m][i];
			if (poke(b, m, inject_fd)) {
				b[m].bad++;
				continue;
			}
			while (__atomic_load_n(&b[m].done, __ATOMIC_ACQUIRE) <
			       i + 1)
				usleep(20);
		}
	}
	for (int m = 0; m < started; m++)
		pthread_join(t[m], NULL);
	return started == M_NR ? 0 : -1;
}

struct stats {
	double p50, p99, max, mean;
};

static struct stats summarise(uint64_t *d, int n)
{
	struct stats s = { 0 };
	double sum = 0;

	if (n <= 0)
		return s;
	qsort(d, (size_t)n, sizeof(*d), cmp_u64);
	for (int i = 0; i < n; i++)
		sum += (double)d[i];
	s.p50 = (double)d[n / 2] / 1e3;
	s.p99 = (double)d[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1] / 1e3;
	s.max = (double)d[n - 1] / 1e3;
	s.mean = sum / n / 1e3;
	return s;
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0;
}

int main(int argc, char **argv)
{
	struct stats inj[M_NR], evt[M_NR];
	struct umm_tier_report t = {
		.tier_type = UMM_TIER_HOST_NODE, .tier_id = 0,
		.resident_bytes = 1 << 20, .reclaimable_bytes = 1 << 20,
	};
	struct bench b[M_NR];
	uint64_t *t_inj[M_NR] = { NULL };
	int n = 1000, json = 0, fail = 0, setup_ok = 1, passed = 0;
	bool pinned = false;
	uint64_t repeat_ms;
	int inject_fd;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "-n") && i + 1 < argc)
			n = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: %s [-n N] [--json]\n", argv[0]);
			return 2;
		}
	}
	if (n < 1 || n > 1000000) {
		fprintf(stderr, "%s: -n wants 1..1000000\n", argv[0]);
		return 2;
	}
	if (!json)
		printf("TAP version 13\n1..%d\n", M_NR);
	attr_write("enabled", "1");
	/*
	 * Held levels are re-announced every repeat_interval_ms: an extra
	 * record would wake a waiter with no inject behind it.
	 */
	if (attr_read_u64("repeat_interval_ms", &repeat_ms))
		repeat_ms = 1000;
	attr_write("repeat_interval_ms", "0");
	for (int m = 0; m < M_NR; m++) {
		b[m] = (struct bench){
			.mode = m, .n = n,
			.t_wake = calloc((size_t)n, sizeof(uint64_t)),
			.t_event = calloc((size_t)n, sizeof(uint64_t)),
		};
		t_inj[m] = calloc((size_t)n, sizeof(uint64_t));
		if (m == M_EVENTFD) {
			b[m].fd = eventfd(0, EFD_CLOEXEC);
			if (b[m].fd < 0 || !t_inj[m] || !b[m].t_wake ||
			    !b[m].t_event)
				setup_ok = 0;
			continue;
		}
		t.tier_id = (uint32_t)m;	/* read: node 0, io_uring: node 1 */
		b[m].fd = umm_client(mode_name[m], 0, 0, 0);
		if (b[m].fd < 0 || !t_inj[m] || !b[m].t_wake ||
		    !b[m].t_event || umm_report(b[m].fd, &t, 1, 0))
			setup_ok = 0;
	}
	inject_fd = open(UMM_SYSFS "/inject", O_WRONLY | O_CLOEXEC);
	if (inject_fd < 0)
		setup_ok = 0;
	if (!setup_ok || run(b, t_inj, inject_fd, &pinned)) {
		fprintf(stderr, "%s: setup failed\n", argv[0]);
		for (int m = 0; m < M_NR; m++)
			b[m].bad = n;
	}
	if (inject_fd >= 0)
		close(inject_fd);
	umm_inject("node 0 clear");
	umm_inject("node 1 clear");
	attr_write_u64("repeat_interval_ms", repeat_ms);
	for (int m = 0; m < M_NR; m++) {
		uint64_t *d1 = calloc((size_t)n, sizeof(uint64_t));
		uint64_t *d2 = calloc((size_t)n, sizeof(uint64_t));

		for (int i = 0; d1 && d2 && i < b[m].done; i++) {
			d1[i] = b[m].t_wake[i] - t_inj[m][i];
			d2[i] = b[m].t_wake[i] - b[m].t_event[i];
		}
		inj[m] = summarise(d1, d1 && d2 ? b[m].done : 0);
		evt[m] = summarise(d2, d1 && d2 ? b[m].done : 0);
		if (b[m].fd >= 0)
			close(b[m].fd);
		free(d1);
		free(d2);
		free(t_inj[m]);
		free(b[m].t_wake);
		free(b[m].t_event);
	}
	for (int m = 0; m < M_NR; m++) {
		int ok = b[m].done == n && !b[m].bad && !b[m].workers;

		fail |= !ok;
		passed += ok;
		if (json)
			continue;
		printf("# %-8s %s->wakeup p50 %8.1f us  p99 %8.1f us  max %8.1f us | event->wakeup p50 %8.1f us  p99 %8.1f us (n=%d)\n",
		       mode_name[m], m == M_EVENTFD ? " write" : "inject",
		       inj[m].p50, inj[m].p99, inj[m].max,
		       evt[m].p50, evt[m].p99, b[m].done);
		if (b[m].workers)
			printf("# %s: %d io-wq worker thread(s): the read was punted\n",
			       mode_name[m], b[m].workers);
		printf("%s %d latency.%s # %d/%d events, %d bad\n",
		       ok ? "ok" : "not ok", m + 1, mode_name[m], b[m].done,
		       n, b[m].bad);
	}
	if (json) {
		printf("{\"n\":%d,\"unit\":\"us\",\"pinned\":%s", n,
		       pinned ? "true" : "false");
		for (int m = 0; m < M_NR; m++)
			printf(",\"%s\":{\"received\":%d,\"bad\":%d,\"io_wq_workers\":%d,"
			       "\"inject_to_wakeup\":{\"p50\":%.1f,\"p99\":%.1f,\"max\":%.1f,\"mean\":%.1f},"
			       "\"event_to_wakeup\":{\"p50\":%.1f,\"p99\":%.1f,\"max\":%.1f,\"mean\":%.1f}}",
			       mode_name[m], b[m].done, b[m].bad, b[m].workers,
			       inj[m].p50, inj[m].p99, inj[m].max, inj[m].mean,
			       evt[m].p50, evt[m].p99, evt[m].max, evt[m].mean);
		printf(",\"io_uring_over_read_p50\":%.3f,\"read_over_eventfd_p99\":%.3f,\"io_uring_over_eventfd_p99\":%.3f}\n",
		       ratio(inj[M_URING].p50, inj[M_READ].p50),
		       ratio(inj[M_READ].p99, inj[M_EVENTFD].p99),
		       ratio(inj[M_URING].p99, inj[M_EVENTFD].p99));
	} else {
		printf("# placement: %s\n", pinned ?
		       "injector on CPU 0, every waiter on CPU 1" :
		       "left to the scheduler (one CPU)");
		printf("# io_uring / read, inject->wakeup p50: %.2f\n",
		       ratio(inj[M_URING].p50, inj[M_READ].p50));
		printf("# over the eventfd floor, p50: read %.2f io_uring %.2f; p99: read %.2f io_uring %.2f\n",
		       ratio(inj[M_READ].p50, inj[M_EVENTFD].p50),
		       ratio(inj[M_URING].p50, inj[M_EVENTFD].p50),
		       ratio(inj[M_READ].p99, inj[M_EVENTFD].p99),
		       ratio(inj[M_URING].p99, inj[M_EVENTFD].p99));
		printf("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:0 error:0\n",
		       passed, M_NR - passed);
	}
	return fail;
}
