// SPDX-License-Identifier: MIT
/*
 * workers.c - fork/join with a generation counter: the steps of a training
 * run are short and many, so the team stays alive between them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "workers.h"

struct workers {
	unsigned int n;		/* members including the caller */
	pthread_t *threads;
	pthread_mutex_t lock;
	pthread_cond_t go, finished;
	unsigned long gen;	/* bumped for every job */
	unsigned int pending;	/* members still working on this job */
	work_fn fn;
	void *arg;
	bool quit;
};

struct member {
	struct workers *w;
	unsigned int id;
};

static void *member_main(void *p)
{
	struct member *m = p;
	struct workers *w = m->w;
	unsigned int id = m->id;
	unsigned long seen;

	free(m);
	/*
	 * Members are made before the first job (gen 0), but one may first
	 * run after that job was posted: reading gen here would take the job
	 * as seen and leave workers_run() waiting for it forever.
	 */
	seen = 0;
	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (w->gen == seen && !w->quit)
			pthread_cond_wait(&w->go, &w->lock);
		if (w->quit)
			break;
		seen = w->gen;
		pthread_mutex_unlock(&w->lock);
		w->fn(w->arg, id, w->n);
		pthread_mutex_lock(&w->lock);
		if (--w->pending == 0)
			pthread_cond_signal(&w->finished);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int workers_start(struct workers **out, unsigned int n)
{
	struct workers *w;
	unsigned int i;

	if (!n)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->threads = calloc(n, sizeof(*w->threads));
	if (!w->threads) {
		free(w);
		return -ENOMEM;
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->go, NULL);
	pthread_cond_init(&w->finished, NULL);
	w->n = 1;
	/* Members are created before any job, so w->n is final before use;
	 * if a thread cannot be made the team is simply smaller. */
	for (i = 1; i < n; i++) {
		struct member *m = malloc(sizeof(*m));

		if (!m)
			break;
		m->w = w;
		m->id = i;
		if (pthread_create(&w->threads[i], NULL, member_main, m)) {
			free(m);
			break;
		}
		w->n++;
	}
	*out = w;
	return 0;
}

void workers_run(struct workers *w, work_fn fn, void *arg)
{
	if (w->n > 1) {
		pthread_mutex_lock(&w->lock);
		w->fn = fn;
		w->arg = arg;
		w->pending = w->n - 1;
		w->gen++;
		pthread_cond_broadcast(&w->go);
		pthread_mutex_unlock(&w->lock);
	}
	fn(arg, 0, w->n);
	if (w->n > 1) {
		pthread_mutex_lock(&w->lock);
		while (w->pending)
			pthread_cond_wait(&w->finished, &w->lock);
		pthread_mutex_unlock(&w->lock);
	}
}

unsigned int workers_count(const struct workers *w)
{
	return w->n;
}

void workers_stop(struct workers *w)
{
	unsigned int i;

	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->quit = true;
	pthread_cond_broadcast(&w->go);
	pthread_mutex_unlock(&w->lock);
	for (i = 1; i < w->n; i++)
		pthread_join(w->threads[i], NULL);
	pthread_cond_destroy(&w->finished);
	pthread_cond_destroy(&w->go);
	pthread_mutex_destroy(&w->lock);
	free(w->threads);
	free(w);
}

void slice(size_t total, size_t align, unsigned int id, unsigned int n,
	   size_t *lo, size_t *hi)
{
	size_t units = (total + align - 1) / align;
	size_t a = units * id / n * align, b = units * (id + 1) / n * align;

	*lo = a < total ? a : total;
	*hi = b < total ? b : total;
}
