// SPDX-License-Identifier: MIT
/*
 * vgpu_stream.c - streams and events of the virtual GPU.
 *
 * A stream is a FIFO of operations executed in order by its own worker
 * thread; an operation is complete only once the worker has done it, so
 * nothing completes early. Every stream also carries a position on the
 * virtual clock (vtail: when its last operation ends), computed when the
 * operation is issued, from the stream, the events it waits for, the copy
 * engines and the host's position: the modeled times depend only on the
 * order of the program's calls, never on how fast this machine runs them.
 *
 * An event record is a mark on the stream; cudaStreamWaitEvent waits for the
 * mark current at the call (re-recording later does not disturb it);
 * synchronising on an event or stream moves the host's clock to its time.
 * A query answers by the virtual clock, so that what a program decides from
 * it does not depend on this machine's speed either: not ready while the
 * point lies ahead of the host's clock, else ready, once the worker has
 * really passed it (waiting for that if need be: still nothing completes
 * early). A query does not move the clock: a loop that only polls waits
 * for ever, where waits and synchronous calls move it. Host functions run
 * when the host's clock reaches their point (a wait, a synchronous call),
 * so what they signal reaches the program at the same place on every run.
 * Not modeled: the legacy default stream's implicit synchronisation with
 * blocking streams (every stream behaves as cudaStreamNonBlocking), stream
 * priorities, graphs and capture.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vgpu_int.h"

static void *vg_worker(void *arg);

/*
 * Query of a point at virtual time t, done when *done: not ready ahead of
 * the host's clock, else ready once really done. vg.mu held.
 */
static cudaError_t vg_query(double t, const int *done, const uint64_t *n,
			    uint64_t upto)
{
	struct timespec until;

	if (t > vg.host_now)
		return cudaErrorNotReady;
	/*
	 * Due by the clock: wait for the worker, but not for ever, in case it
	 * is held by something the caller itself is to do (a host function
	 * waiting on the caller): then it is not ready, as on a GPU.
	 */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 1;
	while (done ? !*done : *n < upto)
		if (pthread_cond_timedwait(&vg.cv, &vg.mu, &until))
			return cudaErrorNotReady;
	return cudaSuccess;
}

void vg_mark_put(struct vg_mark *m)
{
	if (m && --m->refs == 0)
		free(m);
}

static struct CUstream_st *vg_stream_new(int dev)
{
	struct CUstream_st *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->magic = VG_STREAM_MAGIC;
	s->dev = dev;
	if (pthread_create(&s->thread, NULL, vg_worker, s)) {
		free(s);
		return NULL;
	}
	pthread_detach(s->thread);
	pthread_mutex_lock(&vg.mu);
	s->next = vg.streams;
	vg.streams = s;
	pthread_mutex_unlock(&vg.mu);
	return s;
}

/* The stream a call names (NULL: the device's legacy stream), checked. */
cudaError_t vg_stream_get(cudaStream_t s, int dev, struct CUstream_st **out)
{
	if (s) {
		if (s->magic != VG_STREAM_MAGIC)
			return vg_fail(cudaErrorInvalidResourceHandle);
		*out = s;
		return vg_fail(vg_check_dev(s->dev));
	}
	pthread_mutex_lock(&vg.mu);
	if (!vg.dev[dev].legacy) {
		pthread_mutex_unlock(&vg.mu);
		s = vg_stream_new(dev);
		if (!s)
			return vg_fail(cudaErrorMemoryAllocation);
		pthread_mutex_lock(&vg.mu);
		if (!vg.dev[dev].legacy)
			vg.dev[dev].legacy = s;
		else
			s->dying = 1;	/* lost a race: let it go */
		pthread_cond_broadcast(&vg.cv);
	}
	*out = vg.dev[dev].legacy;
	pthread_mutex_unlock(&vg.mu);
	return cudaSuccess;
}

/* Entry of a call on a stream: context, current device, the stream. */
cudaError_t vg_stream_enter(cudaStream_t sh, struct CUstream_st **s)
{
	int dev;
	cudaError_t e = vg_enter(&dev);

	return e ? e : vg_stream_get(sh, dev, s);
}

double vg_stream_start(struct CUstream_st *s)
{
	return vg_max(s->vtail, vg.host_now);
}

void vg_stream_push(struct CUstream_st *s, struct vg_op *op, double t_end)
{
	op->next = NULL;
	if (s->tail)
		s->tail->next = op;
	else
		s->head = op;
	s->tail = op;
	s->queued++;
	op->t_end = t_end;
	s->vtail = vg_max(s->vtail, t_end);
	pthread_cond_broadcast(&vg.cv);
}

/*
 * Wait until everything issued to s so far is done. The host's clock goes
 * to that point first: waiting, the host is there by the time it returns,
 * and host functions up to it may run.
 */
void vg_stream_drain(struct CUstream_st *s)
{
	uint64_t upto = s->queued;

	vg_advance_host(s->vtail);
	while (s->done < upto)
		pthread_cond_wait(&vg.cv, &vg.mu);
}

/* Destroyed streams too: their work still runs, and counts. */
void vg_device_drain(int dev)
{
	struct CUstream_st *s;

	for (s = vg.streams; s; s = s->next)
		if (s->dev == dev)
			vg_stream_drain(s);
}

static int vg_op_uses(const struct vg_op *op, uintptr_t lo, uintptr_t hi)
{
	int i;

	for (i = 0; i < op->nr; i++) {
		uintptr_t a = (uintptr_t)op->r[i].p, b = a + op->r[i].len;

		if (op->r[i].len && a < hi && lo < b)
			return 1;
	}
	return 0;
}

/* An operation not yet complete that touches [lo, hi), or NULL. */
const struct vg_op *vg_inflight_user(uintptr_t lo, uintptr_t hi,
				     struct CUstream_st **on)
{
	struct CUstream_st *s;
	struct vg_op *op;

	for (s = vg.streams; s; s = s->next)
		for (op = s->head; op; op = op->next)
			if (vg_op_uses(op, lo, hi)) {
				*on = s;
				return op;
			}
	return NULL;
}

static void *vg_worker(void *arg)
{
	struct CUstream_st *s = arg;
	struct vg_op *op;

	pthread_mutex_lock(&vg.mu);
	for (;;) {
		while (!s->head && !s->dying)
			pthread_cond_wait(&vg.cv, &vg.mu);
		if (!s->head)
			break;
		op = s->head;	/* stays queued while it runs: it is in flight */
		if (op->type == VG_OP_WAIT) {
			while (!op->mark->done)
				pthread_cond_wait(&vg.cv, &vg.mu);
		} else if (op->type != VG_OP_RECORD && !vg.dev[s->dev].sticky) {
			/* A host function runs once the host's clock is there. */
			while (op->type == VG_OP_HOSTFN &&
			       vg.host_now < op->t_end &&
			       !vg.dev[s->dev].sticky)
				pthread_cond_wait(&vg.cv, &vg.mu);
			pthread_mutex_unlock(&vg.mu);
			vg_op_run(s, op);
			pthread_mutex_lock(&vg.mu);
		}
		s->head = op->next;
		if (!s->head)
			s->tail = NULL;
		if (op->type == VG_OP_RECORD)
			op->mark->done = 1;
		vg_mark_put(op->mark);
		if (op->type == VG_OP_KERNEL)
			free(op->arg);
		free(op);
		s->done++;
		pthread_cond_broadcast(&vg.cv);
	}
	/* Destroyed and drained: the handle is gone, the record stays listed. */
	pthread_mutex_unlock(&vg.mu);
	return NULL;
}

/* ---- streams ------------------------------------------------------------ */

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *out, unsigned int flags)
{
	int dev;
	cudaError_t e = vg_enter(&dev);

	if (e)
		return e;
	if (!out || (flags & ~(unsigned)cudaStreamNonBlocking))
		return vg_fail(cudaErrorInvalidValue);
	*out = vg_stream_new(dev);
	return *out ? cudaSuccess : vg_fail(cudaErrorMemoryAllocation);
}

cudaError_t cudaStreamCreate(cudaStream_t *out)
{
	return cudaStreamCreateWithFlags(out, 0);
}

/* Returns at once; work already issued still completes (as documented). */
cudaError_t cudaStreamDestroy(cudaStream_t s)
{
	vg_init();
	if (vg_in_callback)
		return vg_fail(cudaErrorNotPermitted);
	if (!s || s->magic != VG_STREAM_MAGIC)
		return vg_fail(cudaErrorInvalidResourceHandle);
	pthread_mutex_lock(&vg.mu);
	s->magic = 0;
	s->dying = 1;
	pthread_cond_broadcast(&vg.cv);
	pthread_mutex_unlock(&vg.mu);
	return cudaSuccess;
}

cudaError_t cudaStreamGetDevice(cudaStream_t s, int *dev)
{
	int cur;
	cudaError_t e = vg_enter(&cur);

	if (e)
		return e;
	if (!dev)
		return vg_fail(cudaErrorInvalidValue);
	if (s && s->magic != VG_STREAM_MAGIC)
		return vg_fail(cudaErrorInvalidResourceHandle);
	*dev = s ? s->dev : cur;
	return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t sh)
{
	struct CUstream_st *s;
	cudaError_t e = vg_stream_enter(sh, &s);

	if (e)
		return e;
	pthread_mutex_lock(&vg.mu);
	vg_stream_drain(s);
	e = vg.dev[s->dev].sticky;
	pthread_mutex_unlock(&vg.mu);
	return vg_fail(e);
}

cudaError_t cudaStreamQuery(cudaStream_t sh)
{
	struct CUstream_st *s;
	cudaError_t e = vg_stream_enter(sh, &s);

	if (e)
		return e;
	pthread_mutex_lock(&vg.mu);
	e = vg_query(s->vtail, NULL, &s->done, s->queued);
	pthread_mutex_unlock(&vg.mu);
	return e == cudaErrorNotReady ? e : vg_fail(vg_check_dev(s->dev));
}

cudaError_t cudaLaunchHostFunc(cudaStream_t sh, cudaHostFn_t fn, void *arg)
{
	struct CUstream_st *s;
	struct vg_op *op;
	cudaError_t e = vg_stream_enter(sh, &s);

	if (e)
		return e;
	if (!fn)
		return vg_fail(cudaErrorInvalidValue);
	op = calloc(1, sizeof(*op));
	if (!op)
		return vg_fail(cudaErrorMemoryAllocation);
	op->type = VG_OP_HOSTFN;
	op->hfn = fn;
	op->arg = arg;
	op->what = "host function";
	pthread_mutex_lock(&vg.mu);
	vg_stream_push(s, op, vg_stream_start(s) + 2e3);
	pthread_mutex_unlock(&vg.mu);
	return cudaSuccess;
}

/* ---- events ------------------------------------------------------------- */

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *out, unsigned int flags)
{
	struct CUevent_st *ev;
	int dev;
	cudaError_t e = vg_enter(&dev);

	if (e)
		return e;
	if (!out || (flags & ~(unsigned)(cudaEventBlockingSync |
					cudaEventDisableTiming |
					cudaEventInterprocess)))
		return vg_fail(cudaErrorInvalidValue);
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return vg_fail(cudaErrorMemoryAllocation);
	ev->magic = VG_EVENT_MAGIC;
	ev->dev = dev;
	ev->flags = flags;
	*out = ev;
	return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *e)
{
	return cudaEventCreateWithFlags(e, cudaEventDefault);
}

static cudaError_t vg_event_ok(cudaEvent_t ev)
{
	if (!ev || ev->magic != VG_EVENT_MAGIC)
		return vg_fail(cudaErrorInvalidResourceHandle);
	return cudaSuccess;
}

/* Entry of the calls on an event alone (no stream, no current device). */
static cudaError_t vg_event_enter(cudaEvent_t ev)
{
	vg_init();
	if (vg_in_callback)
		return vg_fail(cudaErrorNotPermitted);
	return vg_event_ok(ev);
}

/* Pending records and waits keep their marks: destroying is always safe. */
cudaError_t cudaEventDestroy(cudaEvent_t ev)
{
	cudaError_t e = vg_event_enter(ev);

	if (e)
		return e;
	pthread_mutex_lock(&vg.mu);
	ev->magic = 0;
	vg_mark_put(ev->last);
	pthread_mutex_unlock(&vg.mu);
	free(ev);
	return cudaSuccess;
}

/* As the driver: an event records only on a stream of its own device. */
cudaError_t cudaEventRecord(cudaEvent_t ev, cudaStream_t sh)
{
	struct CUstream_st *s;
	struct vg_mark *m;
	struct vg_op *op;
	cudaError_t e = vg_stream_enter(sh, &s);

	if (e || (e = vg_event_ok(ev)))
		return e;
	if (s->dev != ev->dev)
		return vg_fail(cudaErrorInvalidResourceHandle);
	m = calloc(1, sizeof(*m));
	op = calloc(1, sizeof(*op));
	if (!m || !op) {
		free(m);
		free(op);
		return vg_fail(cudaErrorMemoryAllocation);
	}
	pthread_mutex_lock(&vg.mu);
	m->refs = 2;		/* the event's, the operation's */
	m->dev = s->dev;
	m->t = vg_stream_start(s);
	op->type = VG_OP_RECORD;
	op->mark = m;
	op->what = "event record";
	vg_mark_put(ev->last);
	ev->last = m;
	vg_stream_push(s, op, m->t);
	pthread_mutex_unlock(&vg.mu);
	return cudaSuccess;
}

/* Cross-device waits are legal in CUDA, and here. */
cudaError_t cudaStreamWaitEvent(cudaStream_t sh, cudaEvent_t ev,
				unsigned int flags)
{
	struct CUstream_st *s;
	struct vg_op *op;
	cudaError_t e = vg_stream_enter(sh, &s);

	if (e || (e = vg_event_ok(ev)))
		return e;
	if (flags & ~(unsigned)cudaEventWaitExternal)
		return vg_fail(cudaErrorInvalidValue);
	pthread_mutex_lock(&vg.mu);
	if (!ev->last) {	/* never recorded: nothing to wait for */
		pthread_mutex_unlock(&vg.mu);
		return cudaSuccess;
	}
	op = calloc(1, sizeof(*op));
	if (!op) {
		pthread_mutex_unlock(&vg.mu);
		return vg_fail(cudaErrorMemoryAllocation);
	}
	op->type = VG_OP_WAIT;
	op->mark = ev->last;
	op->mark->refs++;
	op->what = "event wait";
	vg_stream_push(s, op, vg_max(vg_stream_start(s), op->mark->t));
	pthread_mutex_unlock(&vg.mu);
	return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t ev)
{
	cudaError_t e = vg_event_enter(ev);

	if (e)
		return e;
	e = vg_check_dev(ev->dev);
	if (e)
		return vg_fail(e);
	pthread_mutex_lock(&vg.mu);
	if (ev->last) {
		struct vg_mark *m = ev->last;

		m->refs++;
		e = vg_query(m->t, &m->done, NULL, 0);
		vg_mark_put(m);
	}
	pthread_mutex_unlock(&vg.mu);
	return e;
}

cudaError_t cudaEventSynchronize(cudaEvent_t ev)
{
	cudaError_t e = vg_event_enter(ev);

	if (e)
		return e;
	pthread_mutex_lock(&vg.mu);
	if (ev->last) {
		struct vg_mark *m = ev->last;

		m->refs++;
		vg_advance_host(m->t);
		while (!m->done && !vg.dev[ev->dev].sticky)
			pthread_cond_wait(&vg.cv, &vg.mu);
		vg_mark_put(m);
	}
	e = vg.dev[ev->dev].sticky;
	pthread_mutex_unlock(&vg.mu);
	return vg_fail(e);
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
	cudaError_t e;

	vg_init();
	if ((e = vg_event_ok(a)) || (e = vg_event_ok(b)))
		return e;
	if (!ms)
		return vg_fail(cudaErrorInvalidValue);
	if (a->dev != b->dev || !a->last || !b->last ||
	    ((a->flags | b->flags) & cudaEventDisableTiming))
		return vg_fail(cudaErrorInvalidResourceHandle);
	pthread_mutex_lock(&vg.mu);
	if (!a->last->done || !b->last->done)
		e = cudaErrorNotReady;
	else
		*ms = (float)((b->last->t - a->last->t) / 1e6);
	pthread_mutex_unlock(&vg.mu);
	return e == cudaErrorNotReady ? vg_fail(e) : vg_fail(vg_check_dev(a->dev));
}
