// SPDX-License-Identifier: MIT
/*
 * stager.c - acquires ahead of use on a thread of its own (see stager.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "stager.h"

enum slot_state { SLOT_QUEUED, SLOT_RUNNING, SLOT_DONE };

struct slot {
	um_region_t r;
	enum slot_state state;
	int rc;			/* of um_acquire, once SLOT_DONE */
};

struct stager {
	struct um_context *ctx;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t work, done;
	struct slot slot[STAGER_DEPTH];	/* in posting order */
	unsigned int n;
	bool quit;
};

/* Under lock: the first slot still queued, or NULL. */
static struct slot *next_queued(struct stager *s)
{
	unsigned int i;

	for (i = 0; i < s->n; i++)
		if (s->slot[i].state == SLOT_QUEUED)
			return &s->slot[i];
	return NULL;
}

static void *stager_main(void *arg)
{
	struct stager *s = arg;
	struct slot *sl;
	um_region_t r;
	int rc;

	pthread_mutex_lock(&s->lock);
	while (!s->quit) {
		sl = next_queued(s);
		if (!sl) {
			pthread_cond_wait(&s->work, &s->lock);
			continue;
		}
		sl->state = SLOT_RUNNING;
		r = sl->r;
		pthread_mutex_unlock(&s->lock);
		rc = um_acquire(s->ctx, r, UM_TIER_GPU(0), NULL);
		pthread_mutex_lock(&s->lock);
		/* slots move when one is taken: find r's again */
		for (sl = s->slot; sl->r != r; sl++)
			;
		sl->state = SLOT_DONE;
		sl->rc = rc;
		pthread_cond_broadcast(&s->done);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int stager_start(struct stager **out, struct um_context *ctx)
{
	struct stager *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return -ENOMEM;
	s->ctx = ctx;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->work, NULL);
	pthread_cond_init(&s->done, NULL);
	rc = pthread_create(&s->thread, NULL, stager_main, s);
	if (rc) {
		pthread_cond_destroy(&s->done);
		pthread_cond_destroy(&s->work);
		pthread_mutex_destroy(&s->lock);
		free(s);
		return -rc;
	}
	*out = s;
	return 0;
}

/* Under lock: r's slot index, or s->n. */
static unsigned int find(const struct stager *s, um_region_t r)
{
	unsigned int i;

	for (i = 0; i < s->n && s->slot[i].r != r; i++)
		;
	return i;
}

static bool running(const struct stager *s)
{
	unsigned int i;

	for (i = 0; i < s->n; i++)
		if (s->slot[i].state == SLOT_RUNNING)
			return true;
	return false;
}

static void remove_slot(struct stager *s, unsigned int i)
{
	s->n--;
	memmove(&s->slot[i], &s->slot[i + 1],
		(s->n - i) * sizeof(s->slot[0]));
}

int stager_post(struct stager *s, um_region_t r)
{
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	if (s->n == STAGER_DEPTH)
		rc = -ENOSPC;
	else if (find(s, r) < s->n)
		rc = -EINVAL;
	if (!rc) {
		s->slot[s->n++] = (struct slot){ .r = r,
						 .state = SLOT_QUEUED };
		pthread_cond_signal(&s->work);
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int stager_take(struct stager *s, um_region_t r)
{
	unsigned int i;
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	i = find(s, r);
	while (i < s->n && s->slot[i].state == SLOT_RUNNING) {
		pthread_cond_wait(&s->done, &s->lock);
		i = find(s, r);
	}
	if (i < s->n) {
		if (s->slot[i].state == SLOT_DONE)
			rc = s->slot[i].rc ? s->slot[i].rc : 1;
		remove_slot(s, i);
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

void stager_drain(struct stager *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	while (next_queued(s) || running(s))
		pthread_cond_wait(&s->done, &s->lock);
	pthread_mutex_unlock(&s->lock);
}

void stager_stop(struct stager *s)
{
	unsigned int i;

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	for (i = 0; i < s->n;) {
		if (s->slot[i].state == SLOT_QUEUED)
			remove_slot(s, i);
		else
			i++;
	}
	while (running(s))
		pthread_cond_wait(&s->done, &s->lock);
	s->quit = true;
	pthread_cond_signal(&s->work);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	for (i = 0; i < s->n; i++)
		if (!s->slot[i].rc)
			um_release(s->ctx, s->slot[i].r);
	pthread_cond_destroy(&s->done);
	pthread_cond_destroy(&s->work);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
