// SPDX-License-Identifier: MIT
/*
 * backend_sim.c - a capacity-limited fake GPU on the host.
 *
 * Device memory is one anonymous arena of `capacity` bytes (transparent huge
 * pages asked for) managed by a coalescing extent allocator in 2 MiB units.
 * A TIERED region's VA is a PROT_NONE reservation; phys_map moves an
 * extent's pages (and the arena's read-write protection) from the arena to
 * the VA with mremap(MREMAP_DONTUNMAP), phys_unmap moves them back and
 * closes the emptied VA. So:
 * the VA is stable, touching an evicted region faults (SIGSEGV) like a GPU
 * pointer would, no more than `capacity` bytes can ever be mapped (phys_map
 * returns -ENOMEM), and the same physical pages serve region after region.
 * Reservations are found from any address inside them by a hash
 * (rangemap.c) and hold their own mappings, so map, unmap and release cost
 * the same with ten regions or a hundred thousand, as on a GPU.
 *
 * Why not a memfd mapped MAP_SHARED|MAP_FIXED: shmem gets no huge pages
 * unless the admin enables shmem THP, and on the 4 KiB page path every
 * restore pays a page-table rebuild that on the dev VM cost 20x the copy
 * itself (0.7 GB/s restores against 14 GB/s memcpy). Moving
 * 2 MiB page-table entries with mremap costs tens of microseconds per
 * region. Measurements are in Documentation/design/pool.rst.
 *
 * The arena's pages stay allocated once touched, as a GPU's memory exists
 * whether used or not: the sim costs up to `capacity` bytes of host RAM.
 * Where MREMAP_DONTUNMAP is missing (Linux < 5.7, valgrind), phys_map gives
 * the VA fresh pages instead (map_extent): same capacity and faults,
 * slower restores.
 *
 * Queues are worker threads running a FIFO of jobs (copy, fill, fence
 * record, fence wait); a thread waiting on a queue runs its next job itself
 * while the queue is idle. Large copies are split across helper threads so
 * a migration can use every core, as a DMA engine would not steal the CPU.
 * Fences carry a generation so they can be recorded again (the core reuses
 * them); a fence is reached when its latest record has run.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "backend_sim.h"
#include "rangemap.h"
#include "um_numa.h"
#include "util.h"

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define SIM_GRAN		(2ull << 20)
#define SIM_DEFAULT_CAPACITY	(1ull << 30)
#define SIM_MAX_BYTES		(1ull << 46)
#define SIM_SPLIT_MIN		(8ull << 20)
#define SIM_MAX_HELPERS		3

struct sim;

struct extent {
	uint64_t off, len;
};

struct sim_map;

struct sim_resv {			/* a va_reserve'd range */
	struct sim_resv *prev, *next;	/* sim->resvs */
	struct sim_map *maps;		/* mapped inside it */
	char *va;
	size_t len;
};

struct sim_map {			/* a phys_map'd range: the handle */
	struct sim_map *next;		/* resv->maps */
	char *va;
	uint64_t off, len;
};

enum job_type { JOB_COPY, JOB_FILL, JOB_RECORD, JOB_WAIT };

struct sim_job {
	struct sim_job *next;
	enum job_type type;
	void *dst;
	const void *src;
	size_t len;
	int byte;
	struct um_fence *f;
	uint64_t gen;
};

struct um_queue {
	struct sim *sim;
	struct um_queue *next;		/* sim->queues */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* work, hold change, stop */
	pthread_cond_t done_cv;		/* a job finished */
	struct sim_job *head, *tail;
	uint64_t submitted, completed;
	bool busy;			/* a job is running (worker or helper) */
	bool stop;
	int err;			/* failure since the last fence */
	int sync_err;			/* failure since the last queue_sync */
};

struct um_fence {			/* all fields under sim->fmu */
	struct um_queue *q;		/* queue of the latest record */
	uint64_t gen;			/* records issued */
	uint64_t done;			/* highest record that has run */
	uint64_t ts;			/* CLOCK_MONOTONIC ns of the latest */
	int err;
	int refs;			/* jobs still pointing here */
};

struct sim_part {			/* a piece of a split copy or fill */
	struct sim_part *next;
	char *dst;
	const char *src;		/* NULL: fill with byte */
	size_t len;
	int byte;
	int *left;			/* pieces of the group still running */
};

struct sim {
	struct um_backend *be;
	uint64_t capacity;
	char *arena;
	pthread_mutex_t mu;		/* extents, resvs, queues */
	struct extent *ext;		/* free extents, sorted by offset */
	size_t next_cnt, next_cap;
	uint64_t mapped;
	struct sim_resv resvs;		/* list head (sentinel), for fini */
	char *resv_low;			/* start of the latest run of resvs */
	struct um_rangemap resv_index;	/* resvs by any address inside */
	struct um_queue *queues;
	struct um_queue *dead;		/* destroyed queues, freed at fini */
	bool hold;
	bool fresh;			/* no MREMAP_DONTUNMAP: see sim_init */
	int fail_err;
	unsigned int fail_count;
	bool mlock_warned;

	pthread_mutex_t fmu;		/* fences */
	pthread_cond_t fcv;

	pthread_mutex_t hmu;		/* helpers */
	pthread_cond_t hcv, hdone;
	struct sim_part *tasks;
	bool hstop;
	int nhelpers;
	uint64_t split_min;
	pthread_t helpers[SIM_MAX_HELPERS];
};

static inline struct sim *sim_of(struct um_backend *be)
{
	return be->priv;
}

static void sim_log(struct sim *s, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void sim_log(struct sim *s, int level, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (!s->be->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s->be->log(s->be->log_arg, level, "sim: %s", msg);
}

static inline uint64_t round_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) & ~(a - 1);
}

/* ---- extent allocator (arena offsets) ------------------------------------ */

/* Best fit; -ENOMEM when no free extent is large enough. Under mu. */
static int ext_alloc(struct sim *s, uint64_t len, uint64_t *off)
{
	size_t best = s->next_cnt;

	for (size_t i = 0; i < s->next_cnt; i++)
		if (s->ext[i].len >= len &&
		    (best == s->next_cnt || s->ext[i].len < s->ext[best].len))
			best = i;
	if (best == s->next_cnt)
		return -ENOMEM;
	*off = s->ext[best].off;
	s->ext[best].off += len;
	s->ext[best].len -= len;
	if (!s->ext[best].len) {
		memmove(&s->ext[best], &s->ext[best + 1],
			(s->next_cnt - best - 1) * sizeof(*s->ext));
		s->next_cnt--;
	}
	s->mapped += len;
	return 0;
}

/*
 * Give [off, off+len) back, merging with neighbours. The array never needs
 * more than capacity / SIM_GRAN entries, allocated at init, so this cannot
 * fail.
 */
static void ext_free(struct sim *s, uint64_t off, uint64_t len)
{
	size_t i = 0;

	while (i < s->next_cnt && s->ext[i].off < off)
		i++;
	s->mapped -= len;
	if (i > 0 && s->ext[i - 1].off + s->ext[i - 1].len == off) {
		s->ext[i - 1].len += len;
		if (i < s->next_cnt && off + len == s->ext[i].off) {
			s->ext[i - 1].len += s->ext[i].len;
			memmove(&s->ext[i], &s->ext[i + 1],
				(s->next_cnt - i - 1) * sizeof(*s->ext));
			s->next_cnt--;
		}
		return;
	}
	if (i < s->next_cnt && off + len == s->ext[i].off) {
		s->ext[i].off = off;
		s->ext[i].len += len;
		return;
	}
	memmove(&s->ext[i + 1], &s->ext[i],
		(s->next_cnt - i) * sizeof(*s->ext));
	s->ext[i].off = off;
	s->ext[i].len = len;
	s->next_cnt++;
}

/* ---- moving pages between the arena and a VA ----------------------------- */

/*
 * Move len bytes of pages (and their mapping) from one address to another,
 * leaving the source mapped but empty. One mremap when the source is a
 * single VMA; else one per 2 MiB unit (every boundary we ever create is a
 * multiple of SIM_GRAN, so a unit never straddles two VMAs).
 */
static int move_pages_to(char *from, char *to, size_t len)
{
	const int fl = MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP;

	if (mremap(from, len, len, fl, to) != MAP_FAILED)
		return 0;
	if (errno != EFAULT)
		return -errno;
	for (size_t o = 0; o < len; o += SIM_GRAN)
		if (mremap(from + o, SIM_GRAN, SIM_GRAN, fl, to + o) ==
		    MAP_FAILED)
			return -errno;
	return 0;
}

/* ---- helper threads for split copies ------------------------------------- */

static void part_run(const struct sim_part *p)
{
	if (p->src)
		memcpy(p->dst, p->src, p->len);
	else
		memset(p->dst, p->byte, p->len);
}

/* Run one queued piece if any. Under hmu; returns false if none. */
static bool helper_run_one(struct sim *s)
{
	struct sim_part *p = s->tasks;

	if (!p)
		return false;
	s->tasks = p->next;
	pthread_mutex_unlock(&s->hmu);
	part_run(p);
	pthread_mutex_lock(&s->hmu);
	if (--*p->left == 0)
		pthread_cond_broadcast(&s->hdone);
	return true;
}

static void *helper_main(void *arg)
{
	struct sim *s = arg;

	um__thread_name("um-sim-copy");
	pthread_mutex_lock(&s->hmu);
	while (!s->hstop) {
		if (!helper_run_one(s))
			pthread_cond_wait(&s->hcv, &s->hmu);
	}
	pthread_mutex_unlock(&s->hmu);
	return NULL;
}

/*
 * Copy (src != NULL) or fill len bytes, cut into pieces for the helpers
 * when large; the calling worker runs the first piece and helps with the
 * rest, so a busy helper pool never stalls a queue.
 */
static void sim_copy(struct sim *s, char *dst, const char *src, int byte,
		     size_t len)
{
	struct sim_part parts[SIM_MAX_HELPERS + 1];
	uint64_t split = __atomic_load_n(&s->split_min, __ATOMIC_RELAXED);
	size_t n = (size_t)s->nhelpers + 1, piece;
	int left;

	if (!split || len < split || n < 2) {
		struct sim_part p = { .dst = dst, .src = src, .len = len,
				      .byte = byte };
		part_run(&p);
		return;
	}
	if (n > len / (split / 2))
		n = len / (split / 2);
	if (n < 2)
		n = 2;
	piece = (len / n) & ~(size_t)4095;
	for (size_t i = 0; i < n; i++) {
		size_t o = i * piece;

		parts[i] = (struct sim_part) {
			.dst = dst + o,
			.src = src ? src + o : NULL,
			.len = i == n - 1 ? len - o : piece,
			.byte = byte,
			.left = &left,
		};
	}
	left = (int)n - 1;
	pthread_mutex_lock(&s->hmu);
	for (size_t i = 1; i < n; i++) {
		parts[i].next = s->tasks;
		s->tasks = &parts[i];
	}
	pthread_cond_broadcast(&s->hcv);
	pthread_mutex_unlock(&s->hmu);

	part_run(&parts[0]);

	pthread_mutex_lock(&s->hmu);
	while (left) {
		if (!helper_run_one(s))
			pthread_cond_wait(&s->hdone, &s->hmu);
	}
	pthread_mutex_unlock(&s->hmu);
}

/* ---- queues -------------------------------------------------------------- */

static void fence_reach(struct sim *s, struct um_fence *f, uint64_t gen,
			int err)
{
	pthread_mutex_lock(&s->fmu);
	if (gen > f->done)
		f->done = gen;
	if (gen == f->gen) {
		f->ts = um__now_ns();
		f->err = err;
	}
	f->refs--;
	pthread_cond_broadcast(&s->fcv);
	pthread_mutex_unlock(&s->fmu);
}

static void fence_block(struct sim *s, struct um_fence *f, uint64_t gen)
{
	pthread_mutex_lock(&s->fmu);
	while (f->done < gen)
		pthread_cond_wait(&s->fcv, &s->fmu);
	f->refs--;
	pthread_cond_broadcast(&s->fcv);
	pthread_mutex_unlock(&s->fmu);
}

/* Take an injected failure for a copy/fill job, if one is armed. */
static int take_failure(struct sim *s)
{
	int err = 0;

	pthread_mutex_lock(&s->mu);
	if (s->fail_count) {
		s->fail_count--;
		err = s->fail_err;
	}
	pthread_mutex_unlock(&s->mu);
	return err;
}

static void job_run(struct um_queue *q, struct sim_job *j)
{
	struct sim *s = q->sim;
	int err;

	switch (j->type) {
	case JOB_COPY:
	case JOB_FILL:
		err = take_failure(s);
		pthread_mutex_lock(&q->mu);
		if (err && !q->err)
			q->err = q->sync_err = err;
		err = q->err;
		pthread_mutex_unlock(&q->mu);
		if (!err)
			sim_copy(s, j->dst, j->type == JOB_COPY ? j->src : NULL,
				 j->byte, j->len);
		break;
	case JOB_RECORD:
		pthread_mutex_lock(&q->mu);
		err = q->err ? -EIO : 0;
		q->err = 0;
		pthread_mutex_unlock(&q->mu);
		fence_reach(s, j->f, j->gen, err);
		break;
	case JOB_WAIT:
		fence_block(s, j->f, j->gen);
		break;
	}
}

/* Under q->mu: take the next job if the queue may start one now. */
static struct sim_job *queue_take(struct um_queue *q)
{
	struct sim_job *j = q->head;

	if (!j || q->busy || __atomic_load_n(&q->sim->hold, __ATOMIC_ACQUIRE))
		return NULL;
	q->head = j->next;
	if (!q->head)
		q->tail = NULL;
	q->busy = true;
	return j;
}

/* Under q->mu (dropped while the job runs). */
static void queue_run(struct um_queue *q, struct sim_job *j)
{
	pthread_mutex_unlock(&q->mu);
	job_run(q, j);
	free(j);
	pthread_mutex_lock(&q->mu);
	q->busy = false;
	q->completed++;
	pthread_cond_broadcast(&q->done_cv);
	pthread_cond_signal(&q->cv);
}

/*
 * A thread that waits on q runs q's next job itself when the queue is idle
 * (FIFO order is kept: one job at a time, from the head). On a busy machine
 * this saves the wake-up of the worker, which can cost more than the copy.
 * Under q->mu; true if a job ran.
 */
static bool queue_help(struct um_queue *q)
{
	struct sim_job *j = queue_take(q);

	if (!j)
		return false;
	queue_run(q, j);
	return true;
}

static void *queue_main(void *arg)
{
	struct um_queue *q = arg;

	um__thread_name("um-sim-stream");
	pthread_mutex_lock(&q->mu);
	for (;;) {
		struct sim_job *j;

		if (q->stop && !q->busy) {
			/* destroy: run what is left, held or not */
			j = q->head;
			if (!j)
				break;
			q->head = j->next;
			if (!q->head)
				q->tail = NULL;
			q->busy = true;
		} else {
			j = queue_take(q);
		}
		if (!j) {
			pthread_cond_wait(&q->cv, &q->mu);
			continue;
		}
		queue_run(q, j);
	}
	pthread_mutex_unlock(&q->mu);
	return NULL;
}

static int queue_push(struct um_queue *q, const struct sim_job *tmpl)
{
	struct sim_job *j = malloc(sizeof(*j));

	if (!j)
		return -ENOMEM;
	*j = *tmpl;
	j->next = NULL;
	pthread_mutex_lock(&q->mu);
	if (q->tail)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
	q->submitted++;
	pthread_cond_signal(&q->cv);
	pthread_mutex_unlock(&q->mu);
	return 0;
}

static void queue_kick_all(struct sim *s)
{
	for (struct um_queue *q = s->queues; q; q = q->next) {
		pthread_mutex_lock(&q->mu);
		pthread_cond_broadcast(&q->cv);
		pthread_mutex_unlock(&q->mu);
	}
}

static int sim_queue_create(struct um_backend *be, int dev,
			    struct um_queue **out)
{
	struct sim *s = sim_of(be);
	struct um_queue *q;
	int ret;

	if (dev != 0)
		return -ENODEV;
	if (!out)
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->sim = s;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	pthread_cond_init(&q->done_cv, NULL);
	ret = pthread_create(&q->thread, NULL, queue_main, q);
	if (ret) {
		pthread_cond_destroy(&q->done_cv);
		pthread_cond_destroy(&q->cv);
		pthread_mutex_destroy(&q->mu);
		free(q);
		return -ret;
	}
	pthread_mutex_lock(&s->mu);
	q->next = s->queues;
	s->queues = q;
	pthread_mutex_unlock(&s->mu);
	*out = q;
	return 0;
}

/* Runs the queue's remaining work (even if held), then stops it. */
static void sim_queue_destroy(struct um_backend *be, struct um_queue *q)
{
	struct sim *s = sim_of(be);
	struct um_queue **pp;

	if (!q)
		return;
	pthread_mutex_lock(&s->mu);
	for (pp = &s->queues; *pp && *pp != q; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = q->next;
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_lock(&q->mu);
	q->stop = true;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
	pthread_join(q->thread, NULL);
	/* fences may still point here (fence_wait helps their queue) */
	pthread_mutex_lock(&s->mu);
	q->next = s->dead;
	s->dead = q;
	pthread_mutex_unlock(&s->mu);
}

static void queue_free(struct um_queue *q)
{
	pthread_cond_destroy(&q->done_cv);
	pthread_cond_destroy(&q->cv);
	pthread_mutex_destroy(&q->mu);
	free(q);
}

static bool overlap(const char *a, const char *b, size_t len)
{
	return a < b + len && b < a + len;
}

static int sim_copy_op(struct um_backend *be, struct um_queue *q, void *dst,
		       const void *src, size_t len)
{
	struct sim_job j = { .type = JOB_COPY, .dst = dst, .src = src,
			     .len = len };

	if (!q || !dst || !src)
		return -EINVAL;
	if (!len)
		return 0;
	if (overlap(dst, src, len))
		return -EINVAL;
	return queue_push(q, &j);
}

static int sim_fill(struct um_backend *be, struct um_queue *q, void *dst,
		    int byte, size_t len)
{
	struct sim_job j = { .type = JOB_FILL, .dst = dst, .byte = byte,
			     .len = len };

	if (!q || !dst)
		return -EINVAL;
	if (!len)
		return 0;
	return queue_push(q, &j);
}

static int sim_queue_sync(struct um_backend *be, struct um_queue *q)
{
	uint64_t target;
	int err;

	if (!q)
		return -EINVAL;
	pthread_mutex_lock(&q->mu);
	target = q->submitted;
	while (q->completed < target)
		if (!queue_help(q))
			pthread_cond_wait(&q->done_cv, &q->mu);
	err = q->sync_err ? -EIO : 0;
	q->sync_err = 0;
	pthread_mutex_unlock(&q->mu);
	return err;
}

/* ---- fences -------------------------------------------------------------- */

static int sim_fence_create(struct um_backend *be, struct um_fence **f)
{
	if (!f)
		return -EINVAL;
	*f = calloc(1, sizeof(**f));
	return *f ? 0 : -ENOMEM;
}

/* Waits until no queued job points at f any more. */
static void sim_fence_destroy(struct um_backend *be, struct um_fence *f)
{
	struct sim *s = sim_of(be);

	if (!f)
		return;
	pthread_mutex_lock(&s->fmu);
	while (f->refs)
		pthread_cond_wait(&s->fcv, &s->fmu);
	pthread_mutex_unlock(&s->fmu);
	free(f);
}

static int sim_fence_record(struct um_backend *be, struct um_fence *f,
			    struct um_queue *q)
{
	struct sim *s = sim_of(be);
	struct sim_job j = { .type = JOB_RECORD, .f = f };
	int ret;

	if (!f || !q)
		return -EINVAL;
	pthread_mutex_lock(&s->fmu);
	j.gen = ++f->gen;
	f->refs++;
	f->q = q;
	pthread_mutex_unlock(&s->fmu);
	ret = queue_push(q, &j);
	if (ret)
		fence_reach(s, f, j.gen, ret);
	return ret;
}

/* A fence never recorded counts as reached (as a fresh CUDA event does). */
static int sim_fence_query(struct um_backend *be, struct um_fence *f)
{
	struct sim *s = sim_of(be);
	int ret;

	if (!f)
		return -EINVAL;
	pthread_mutex_lock(&s->fmu);
	if (f->done < f->gen)
		ret = -EAGAIN;
	else
		ret = f->err;
	pthread_mutex_unlock(&s->fmu);
	return ret;
}

static int sim_fence_wait(struct um_backend *be, struct um_fence *f)
{
	struct sim *s = sim_of(be);
	struct um_queue *q;
	uint64_t gen;
	int ret;

	if (!f)
		return -EINVAL;
	pthread_mutex_lock(&s->fmu);
	gen = f->gen;
	while (f->done < gen) {
		/* run the fence's queue ourselves while it is idle */
		q = f->q;
		pthread_mutex_unlock(&s->fmu);
		if (q) {
			bool ran;

			pthread_mutex_lock(&q->mu);
			ran = queue_help(q);
			pthread_mutex_unlock(&q->mu);
			if (ran) {
				pthread_mutex_lock(&s->fmu);
				continue;
			}
		}
		pthread_mutex_lock(&s->fmu);
		if (f->done < gen)
			pthread_cond_wait(&s->fcv, &s->fmu);
	}
	ret = f->err;
	pthread_mutex_unlock(&s->fmu);
	return ret;
}

static int sim_fence_elapsed(struct um_backend *be, struct um_fence *start,
			     struct um_fence *end, uint64_t *ns)
{
	struct sim *s = sim_of(be);
	int ret = 0;

	if (!start || !end || !ns)
		return -EINVAL;
	pthread_mutex_lock(&s->fmu);
	if (!start->gen || !end->gen)
		ret = -EINVAL;
	else if (start->done < start->gen || end->done < end->gen)
		ret = -EAGAIN;
	else if (end->ts < start->ts)
		ret = -EINVAL;
	else
		*ns = end->ts - start->ts;
	pthread_mutex_unlock(&s->fmu);
	return ret;
}

static int sim_queue_wait_fence(struct um_backend *be, struct um_queue *q,
				struct um_fence *f)
{
	struct sim *s = sim_of(be);
	struct sim_job j = { .type = JOB_WAIT, .f = f };
	int ret;

	if (!q || !f)
		return -EINVAL;
	pthread_mutex_lock(&s->fmu);
	if (f->done >= f->gen) {	/* reached or never recorded */
		pthread_mutex_unlock(&s->fmu);
		return 0;
	}
	j.gen = f->gen;
	f->refs++;
	pthread_mutex_unlock(&s->fmu);
	ret = queue_push(q, &j);
	if (ret) {
		pthread_mutex_lock(&s->fmu);
		f->refs--;
		pthread_cond_broadcast(&s->fcv);
		pthread_mutex_unlock(&s->fmu);
	}
	return ret;
}

/*
 * The sim has no device streams: the caller's "stream" is the calling
 * thread, whose later work is whatever it does after we return. So waiting
 * on the stream means blocking the caller until f is reached (stream is
 * ignored), and recording on it means "now".
 */
static int sim_stream_wait_fence(struct um_backend *be, void *stream,
				 struct um_fence *f)
{
	return sim_fence_wait(be, f);
}

static int sim_stream_record_fence(struct um_backend *be, void *stream,
				   struct um_fence *f)
{
	struct sim *s = sim_of(be);

	if (!f)
		return -EINVAL;
	pthread_mutex_lock(&s->fmu);
	f->done = ++f->gen;
	f->ts = um__now_ns();
	f->err = 0;
	pthread_cond_broadcast(&s->fcv);
	pthread_mutex_unlock(&s->fmu);
	return 0;
}

/* ---- device memory ------------------------------------------------------- */

static int sim_probe(const char **why)
{
	if (why)
		*why = NULL;
	return 1;
}

static int sim_device_count(struct um_backend *be)
{
	return 1;
}

static int sim_mem_info(struct um_backend *be, int dev, uint64_t *free_b,
			uint64_t *total_b)
{
	struct sim *s = sim_of(be);

	if (dev != 0)
		return -ENODEV;
	pthread_mutex_lock(&s->mu);
	if (free_b)
		*free_b = s->capacity - s->mapped;
	if (total_b)
		*total_b = s->capacity;
	pthread_mutex_unlock(&s->mu);
	return 0;
}

static size_t sim_granularity(struct um_backend *be, int dev)
{
	return SIM_GRAN;
}

/*
 * rlen bytes of VA (a multiple of SIM_GRAN), right below the previous
 * reservation where that is free, so that the kernel merges them into one
 * mapping, as a GPU driver carves its reservations out of one VA range: a
 * hundred thousand regions then take neither a hundred thousand of the
 * process's mappings (vm.max_map_count is 65530 by default) nor a search
 * of that many at each mmap and munmap. Under mu.
 */
static char *resv_map(struct sim *s, size_t rlen)
{
	const int fl = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
	char *low = s->resv_low, *p;

	if ((uintptr_t)low > rlen) {
		/* a kernel without MAP_FIXED_NOREPLACE takes it as a hint */
		p = mmap(low - rlen, rlen, PROT_NONE, fl | MAP_FIXED_NOREPLACE,
			 -1, 0);
		if (p == low - rlen)
			return s->resv_low = p;
		if (p != MAP_FAILED)
			munmap(p, rlen);
	}
	p = um__map_aligned(rlen, SIM_GRAN, PROT_NONE, fl);
	if (p)
		s->resv_low = p;
	return p;
}

static int sim_va_reserve(struct um_backend *be, int dev, size_t len,
			  void **va)
{
	struct sim *s = sim_of(be);
	struct sim_resv *r;
	size_t rlen;

	if (dev != 0)
		return -ENODEV;
	if (!len || !va)
		return -EINVAL;
	if (len > SIM_MAX_BYTES)
		return -ENOMEM;
	rlen = round_up(len, SIM_GRAN);
	r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	pthread_mutex_lock(&s->mu);
	r->va = resv_map(s, rlen);
	if (!r->va) {
		pthread_mutex_unlock(&s->mu);
		free(r);
		return -ENOMEM;
	}
	r->len = rlen;
	r->maps = NULL;
	if (um__rangemap_insert(&s->resv_index, (uintptr_t)r->va, rlen,
				(uintptr_t)r)) {
		pthread_mutex_unlock(&s->mu);
		munmap(r->va, rlen);
		free(r);
		return -ENOMEM;
	}
	r->prev = &s->resvs;
	r->next = s->resvs.next;
	r->next->prev = r;
	s->resvs.next = r;
	pthread_mutex_unlock(&s->mu);
	*va = r->va;
	return 0;
}

/*
 * Make [va, va + len) a plain PROT_NONE reservation again, dropping any
 * pages left there. A new mapping rather than mprotect: a range pages were
 * moved into keeps the arena's page offsets and flags, so it would stay a
 * mapping of its own next to every other range ever mapped (one per
 * region: vm.max_map_count) instead of merging back into its neighbours.
 */
static int va_close(char *va, size_t len)
{
	if (mmap(va, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
		 MAP_NORESERVE | MAP_FIXED, -1, 0) == MAP_FAILED)
		return -errno;
	return 0;
}

/* Under mu: close va and move its pages back to the arena. */
static void map_undo(struct sim *s, struct sim_map *m)
{
	int ret = 0, err;

	/*
	 * Move first, then close the emptied VA: closing a range with no
	 * pages left costs next to nothing, while closing it with its pages
	 * first walks every page-table entry.
	 */
	if (!s->fresh)
		ret = move_pages_to(m->va, s->arena + m->off, m->len);
	err = va_close(m->va, m->len);
	if (!ret)
		ret = err;
	if (ret)
		sim_log(s, UM_LOG_ERR,
			"cannot take %s back from %p: %s; leaked",
			UM_SIZE(m->len), (void *)m->va, strerror(-ret));
	else
		ext_free(s, m->off, m->len);
}

/*
 * Map rlen bytes of extent off at p. Where mremap cannot keep its source
 * (MREMAP_DONTUNMAP: Linux < 5.7, or valgrind, which does not know the
 * flag), the VA gets fresh anonymous pages instead: capacity, faults and
 * stable VAs behave the same, contents are not kept across unmap (the
 * core never relies on that) and restores pay for zeroed pages.
 */
static int map_extent(struct sim *s, char *p, uint64_t off, uint64_t rlen)
{
	int ret;

	if (s->fresh) {
		if (mmap(p, rlen, PROT_READ | PROT_WRITE, MAP_PRIVATE |
			 MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) ==
		    MAP_FAILED)
			return -errno;
		madvise(p, rlen, MADV_HUGEPAGE);
		return 0;
	}
	/* the arena is read-write, so the moved range opens as it lands */
	ret = move_pages_to(s->arena + off, p, rlen);
	if (ret) {
		/* pieces already moved go back with the rest */
		move_pages_to(p, s->arena + off, rlen);
		va_close(p, rlen);
	}
	return ret;
}

/* The reservation holding p, or NULL. Under mu. */
static struct sim_resv *resv_at(struct sim *s, const void *p)
{
	return (struct sim_resv *)(uintptr_t)um__rangemap_find(&s->resv_index,
							       (uintptr_t)p);
}

static void sim_va_release(struct um_backend *be, void *va, size_t len)
{
	struct sim *s = sim_of(be);
	struct sim_resv *r;

	if (!va)
		return;
	pthread_mutex_lock(&s->mu);
	r = resv_at(s, va);
	if (!r || r->va != va) {
		pthread_mutex_unlock(&s->mu);
		sim_log(s, UM_LOG_WARN, "va_release of unknown VA %p", va);
		return;
	}
	um__rangemap_remove(&s->resv_index, (uintptr_t)r->va, r->len);
	r->prev->next = r->next;
	r->next->prev = r->prev;
	while (r->maps) {
		struct sim_map *m = r->maps;

		sim_log(s, UM_LOG_WARN, "va_release with %s still mapped",
			UM_SIZE(m->len));
		map_undo(s, m);
		r->maps = m->next;
		free(m);
	}
	munmap(r->va, r->len);
	pthread_mutex_unlock(&s->mu);
	free(r);
}

static int sim_phys_map(struct um_backend *be, int dev, void *va, size_t len,
			void **handle)
{
	struct sim *s = sim_of(be);
	char *p = va;
	struct sim_resv *r;
	struct sim_map *m;
	uint64_t rlen, off;
	int ret;

	if (dev != 0)
		return -ENODEV;
	if (!va || !len || !handle || ((uintptr_t)va & (SIM_GRAN - 1)))
		return -EINVAL;
	if (len > SIM_MAX_BYTES)
		return -ENOMEM;
	rlen = round_up(len, SIM_GRAN);
	m = malloc(sizeof(*m));
	if (!m)
		return -ENOMEM;
	pthread_mutex_lock(&s->mu);
	r = resv_at(s, p);
	ret = -EINVAL;			/* not inside one reservation */
	if (!r || rlen > r->len - (size_t)(p - r->va))
		goto fail;
	ret = -EBUSY;
	for (struct sim_map *o = r->maps; o; o = o->next)
		if (p < o->va + o->len && o->va < p + rlen)
			goto fail;
	ret = ext_alloc(s, rlen, &off);
	if (ret)
		goto fail;
	ret = map_extent(s, p, off, rlen);
	if (ret) {
		ext_free(s, off, rlen);
		goto fail;
	}
	m->va = p;
	m->off = off;
	m->len = rlen;
	m->next = r->maps;
	r->maps = m;
	pthread_mutex_unlock(&s->mu);
	*handle = m;
	return 0;
fail:
	pthread_mutex_unlock(&s->mu);
	free(m);
	return ret;
}

static void sim_phys_unmap(struct um_backend *be, int dev, void *va,
			   size_t len, void *handle)
{
	struct sim *s = sim_of(be);
	struct sim_resv *r;
	struct sim_map **mp = NULL;

	pthread_mutex_lock(&s->mu);
	r = resv_at(s, va);
	if (r)
		for (mp = &r->maps; *mp && *mp != handle; mp = &(*mp)->next)
			;
	if (!mp || !*mp || (*mp)->va != va) {
		pthread_mutex_unlock(&s->mu);
		sim_log(s, UM_LOG_WARN, "phys_unmap of unknown mapping %p", va);
		return;
	}
	*mp = ((struct sim_map *)handle)->next;
	map_undo(s, handle);
	pthread_mutex_unlock(&s->mu);
	free(handle);
}

/* ---- pinned host memory -------------------------------------------------- */

/*
 * The "raw pinned allocation" the pool amortises: anonymous memory, bound
 * to node when asked, locked so it cannot be swapped (when RLIMIT_MEMLOCK
 * allows; else populated and left unlocked, with one warning).
 */
static int sim_host_alloc(struct um_backend *be, size_t len, int node,
			  void **out)
{
	struct sim *s = sim_of(be);
	size_t alen;
	char *p;

	if (!len || !out || node < -1)
		return -EINVAL;
	if (len > SIM_MAX_BYTES)
		return -ENOMEM;
	if (node >= 0 && !um__numa_node_valid(node))
		return -EINVAL;
	alen = round_up(len, 4096);
	if (alen >= SIM_GRAN)
		p = um__map_aligned(alen, SIM_GRAN, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS);
	else
		p = um__map_aligned(alen, 4096, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS);
	if (!p)
		return -ENOMEM;
	if (alen >= SIM_GRAN)
		madvise(p, alen, MADV_HUGEPAGE);
	if (node >= 0) {
		int err = um__numa_bind(p, alen, node);

		if (err) {
			munmap(p, alen);
			return err;
		}
	}
	if (mlock(p, alen)) {
		if (errno != EPERM && errno != ENOMEM && errno != EAGAIN) {
			int err = errno;

			munmap(p, alen);
			return -err;
		}
		if (!__atomic_exchange_n(&s->mlock_warned, true,
					 __ATOMIC_RELAXED))
			sim_log(s, UM_LOG_WARN,
				"mlock refused (RLIMIT_MEMLOCK?): pool memory is not locked");
		if (madvise(p, alen, MADV_POPULATE_WRITE))
			for (size_t o = 0; o < alen; o += 4096)
				((volatile char *)p)[o] = 0;
	}
	*out = p;
	return 0;
}

static void sim_host_free(struct um_backend *be, void *p, size_t len)
{
	if (p && len)
		munmap(p, round_up(len, 4096));
}

/* ---- life cycle ---------------------------------------------------------- */

static void sim_fini(struct um_backend *be)
{
	struct sim *s = sim_of(be);

	if (!s)
		return;
	while (s->queues)
		sim_queue_destroy(be, s->queues);
	while (s->dead) {
		struct um_queue *q = s->dead;

		s->dead = q->next;
		queue_free(q);
	}
	pthread_mutex_lock(&s->hmu);
	s->hstop = true;
	pthread_cond_broadcast(&s->hcv);
	pthread_mutex_unlock(&s->hmu);
	for (int i = 0; i < s->nhelpers; i++)
		pthread_join(s->helpers[i], NULL);
	while (s->resvs.next != &s->resvs) {
		struct sim_resv *r = s->resvs.next;

		s->resvs.next = r->next;
		while (r->maps) {
			struct sim_map *m = r->maps;

			r->maps = m->next;
			free(m);
		}
		munmap(r->va, r->len);
		free(r);
	}
	um__rangemap_fini(&s->resv_index);
	munmap(s->arena, s->capacity);
	free(s->ext);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->fmu);
	pthread_cond_destroy(&s->fcv);
	pthread_mutex_destroy(&s->hmu);
	pthread_cond_destroy(&s->hcv);
	pthread_cond_destroy(&s->hdone);
	free(s);
	be->priv = NULL;
}

/* Can pages move with MREMAP_DONTUNMAP here? Tried on the arena's start. */
static bool dontunmap_works(char *arena)
{
	char *tmp = um__map_aligned(SIM_GRAN, SIM_GRAN, PROT_NONE,
				    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE);
	bool ok;

	if (!tmp)
		return false;
	ok = !move_pages_to(arena, tmp, SIM_GRAN) &&
	     !move_pages_to(tmp, arena, SIM_GRAN);
	munmap(tmp, SIM_GRAN);
	return ok;
}

static int sim_init(struct um_backend *be, const struct um_backend_config *cfg)
{
	uint64_t cap = SIM_DEFAULT_CAPACITY;
	char a[UM_SIZE_STR], b[UM_SIZE_STR];
	long ncpu;
	struct sim *s;

	if (!be)
		return -EINVAL;
	if (cfg && cfg->device != 0)
		return -ENODEV;
	if (cfg && cfg->sim_capacity)
		cap = cfg->sim_capacity;
	if (cap > SIM_MAX_BYTES) {
		if (be->log)
			be->log(be->log_arg, UM_LOG_ERR,
				"sim: sim_capacity %s is above the largest simulated device, %s",
				um__size_str(cap, a), um__size_str(SIM_MAX_BYTES, b));
		return -EINVAL;
	}
	cap = round_up(cap, SIM_GRAN);
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->be = be;
	s->capacity = cap;
	s->split_min = SIM_SPLIT_MIN;
	s->next_cap = cap / SIM_GRAN / 2 + 1;
	s->ext = calloc(s->next_cap, sizeof(*s->ext));
	/* read-write, yet never touched here: its pages exist only once a
	 * region's VA has touched them */
	s->arena = um__map_aligned(cap, SIM_GRAN, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE);
	if (!s->ext || !s->arena) {
		/* the arena is address space only: a ulimit -v refuses it */
		if (!s->arena && be->log)
			be->log(be->log_arg, UM_LOG_ERR,
				"sim: cannot reserve %s of address space for sim_capacity: %s",
				um__size_str(cap, a), strerror(errno));
		if (s->arena)
			munmap(s->arena, cap);
		free(s->ext);
		free(s);
		return -ENOMEM;
	}
	madvise(s->arena, cap, MADV_HUGEPAGE);
	s->fresh = !dontunmap_works(s->arena);
	s->ext[0] = (struct extent){ .off = 0, .len = cap };
	s->next_cnt = 1;
	s->resvs.prev = s->resvs.next = &s->resvs;
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->fmu, NULL);
	pthread_cond_init(&s->fcv, NULL);
	pthread_mutex_init(&s->hmu, NULL);
	pthread_cond_init(&s->hcv, NULL);
	pthread_cond_init(&s->hdone, NULL);
	be->priv = s;
	if (s->fresh)
		sim_log(s, UM_LOG_INFO,
			"mremap(MREMAP_DONTUNMAP) unavailable: fresh pages per map");

	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	for (long i = 0; i < ncpu - 1 && i < SIM_MAX_HELPERS; i++) {
		if (pthread_create(&s->helpers[i], NULL, helper_main, s))
			break;
		s->nhelpers++;
	}
	return 0;
}

/* ---- test hooks (backend_sim.h) ------------------------------------------ */

static bool is_sim(struct um_backend *be)
{
	return be && be->ops == &um__backend_sim && be->priv;
}

int um__sim_hold(struct um_backend *be, bool hold)
{
	struct sim *s;

	if (!is_sim(be))
		return -EINVAL;
	s = sim_of(be);
	pthread_mutex_lock(&s->mu);
	__atomic_store_n(&s->hold, hold, __ATOMIC_RELEASE);
	queue_kick_all(s);
	pthread_mutex_unlock(&s->mu);
	return 0;
}

int um__sim_fail_next(struct um_backend *be, int err, unsigned int count)
{
	struct sim *s;

	if (!is_sim(be) || err >= 0)
		return -EINVAL;
	s = sim_of(be);
	pthread_mutex_lock(&s->mu);
	s->fail_err = err;
	s->fail_count = count;
	pthread_mutex_unlock(&s->mu);
	return 0;
}

uint64_t um__sim_mapped_bytes(struct um_backend *be)
{
	struct sim *s;
	uint64_t n;

	if (!is_sim(be))
		return 0;
	s = sim_of(be);
	pthread_mutex_lock(&s->mu);
	n = s->mapped;
	pthread_mutex_unlock(&s->mu);
	return n;
}

uint64_t um__sim_set_split_min(struct um_backend *be, uint64_t split_min)
{
	if (!is_sim(be))
		return 0;
	return __atomic_exchange_n(&sim_of(be)->split_min, split_min,
				   __ATOMIC_RELAXED);
}

const struct um_backend_ops um__backend_sim = {
	.id = UM_BACKEND_SIM,
	.name = "sim",
	.probe = sim_probe,
	.init = sim_init,
	.fini = sim_fini,
	.device_count = sim_device_count,
	.mem_info = sim_mem_info,
	.granularity = sim_granularity,
	.host_alloc = sim_host_alloc,
	.host_free = sim_host_free,
	.va_reserve = sim_va_reserve,
	.va_release = sim_va_release,
	.phys_map = sim_phys_map,
	.phys_unmap = sim_phys_unmap,
	/* no managed memory: the core maps MANAGED to TIERED on sim */
	.managed_alloc = NULL,
	.managed_free = NULL,
	.advise = NULL,
	.prefetch = NULL,
	.discard = NULL,
	.queue_create = sim_queue_create,
	.queue_destroy = sim_queue_destroy,
	.copy = sim_copy_op,
	.fill = sim_fill,
	.queue_sync = sim_queue_sync,
	.fence_create = sim_fence_create,
	.fence_destroy = sim_fence_destroy,
	.fence_record = sim_fence_record,
	.fence_query = sim_fence_query,
	.fence_wait = sim_fence_wait,
	.fence_elapsed_ns = sim_fence_elapsed,
	.queue_wait_fence = sim_queue_wait_fence,
	.stream_wait_fence = sim_stream_wait_fence,
	.stream_record_fence = sim_stream_record_fence,
};
