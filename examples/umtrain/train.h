/* SPDX-License-Identifier: MIT */
/*
 * train.h - one umtrain run: an MLP learning a fixed random teacher network
 * with Adam, every tensor in a libum region.
 */
#ifndef UMTRAIN_TRAIN_H
#define UMTRAIN_TRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "um.h"

#define TRAIN_IN_DIM	64	/* inputs of the task */
#define TRAIN_OUT_DIM	16	/* outputs of the task */
#define TRAIN_TEACHER	64	/* the teacher's hidden width */
#define TRAIN_GRANULE	(2u << 20)	/* device allocation unit assumed */

struct train_cfg {
	unsigned int hidden;	/* width of the hidden layers */
	unsigned int layers;	/* linear layers, >= 2 */
	unsigned int batch;
	unsigned int steps;
	unsigned int threads;	/* math threads; 0: one per CPU, less one
				 * on the sim backend (train.c) */
	uint64_t seed;
	float lr;
	bool unlimited;		/* budget below is ignored */
	bool no_prefetch;	/* acquire regions only when used */
	uint64_t budget;	/* device bytes */
	uint64_t shard_bytes;	/* optimizer state per region, at most */
	int backend;		/* enum um_backend_id */
};

/* Bytes the model needs, by kind, as regions are made (unrounded). */
struct train_sizes {
	uint64_t params;		/* parameter count */
	uint64_t param_bytes, grad_bytes, state_bytes, act_bytes;
	uint64_t regions;
	uint64_t state_regions;
	uint64_t working_set;		/* device bytes one step needs at once,
					 * regions rounded to TRAIN_GRANULE */
};

struct train_result {
	int backend;			/* enum um_backend_id in use */
	unsigned int threads;		/* math threads the run used */
	uint64_t budget;		/* the device budget set */
	double loss_first, loss_last;
	uint64_t checksum;		/* XXH3-64 of every final weight */
	uint64_t state_checksum;	/* XXH3-64 of every final m and v */
	double seconds;
	struct um_stats st;
	/* migrations made by the steps alone (set-up and checksums not) */
	uint64_t steps_migrated_bytes, steps_migration_ns;
};

/* Called after every step with the step's loss and libum's stats. */
typedef void (*train_step_fn)(void *arg, unsigned int step, double loss,
			      const struct um_stats *st);

void train_sizes(const struct train_cfg *cfg, struct train_sizes *sz);
/*
 * 0 or -errno; on failure err says what failed (libum's last message
 * included). Messages libum logs at warning level or worse go to log_fn.
 */
int train_run(const struct train_cfg *cfg, struct train_result *res,
	      train_step_fn step_fn, void *step_arg, um_log_fn log_fn,
	      void *log_arg, char *err, size_t errlen);

/*
 * Two runs (cfg[0] and cfg[1], the same number of steps) trained in
 * lockstep, one step of each in turn (odd steps the other first), so the
 * machine's load hits both alike; step_ns[k][s] is run k's step s, up to
 * when the work it left in the background (acquires ahead, migrations)
 * has finished: none of it overlaps the other run's step. For benchmarks.
 * 0 or -errno, as train_run().
 */
int train_lockstep(const struct train_cfg *cfg[2],
		   struct train_result res[2], uint64_t *step_ns[2],
		   um_log_fn log_fn, void *log_arg, char *err, size_t errlen);

#endif /* UMTRAIN_TRAIN_H */
