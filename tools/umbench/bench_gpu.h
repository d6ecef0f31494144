/* SPDX-License-Identifier: MIT */
/*
 * bench_gpu.h - internals of umbench --gpu, shared by bench_gpu*.cu.
 *
 * Every figure is measured in this run, on this machine, side by side:
 * ratios are to the pinned cudaMemcpyAsync ceilings measured first.
 */
#ifndef UMBENCH_BENCH_GPU_H
#define UMBENCH_BENCH_GPU_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>

#include "um.h"

#define BG_MiB (1ull << 20)
#define BG_GiB (1ull << 30)
#define BG_ERR_LEN 256

struct bg_opts {
	uint64_t bytes;		/* per transfer test (--gpu-bytes) */
	uint64_t params;	/* Adam parameters (--adam-params), 0 = skip */
	int reps;		/* timed repetitions, best kept */
	int pieces;		/* (g) pipeline pieces */
	int threads;		/* CPU Adam threads */
	int json;
	const char *json_file;	/* also write the JSON object there */
	int progress;		/* stderr is a TTY */
};

/* One evict/restore measurement. */
struct bg_mig {
	const char *id, *name;
	double evict_gbps, restore_gbps;	/* event-timed, best of reps */
	double dev_evict_gbps, dev_restore_gbps; /* libum's device timing */
	double freed_gib;	/* device memory given back by the eviction */
	int freed_known;
	int intact;		/* 1 yes, 0 no, -1 not checked */
	char err[BG_ERR_LEN];
};

struct bg_adam {
	const char *id, *name;
	double in_ms, step_ms, out_ms, total_ms;	/* best of reps */
	int parts;		/* in/step/out measured separately */
	int identical;		/* params bitwise equal to (a): 1/0/-1 */
	uint64_t ndiff;
	double max_diff;
	double freed_gib;
	int freed_known;
	char note[BG_ERR_LEN];
	char err[BG_ERR_LEN];
};

#define BG_MAX_MIG 8
#define BG_MAX_ADAM 10

struct bg_results {
	char device[256];
	uint64_t dev_total;
	int driver_version, runtime_version;
	uint64_t pin_bytes;			/* min(256 MiB, --gpu-bytes) */
	double pin_alloc_ms, pin_register_ms;
	char pin_err[BG_ERR_LEN];
	double h2d, d2h, both;			/* ceilings, GB/s */
	char ceil_err[BG_ERR_LEN];
	char ctx_err[BG_ERR_LEN];		/* libum context */
	struct bg_mig mig[BG_MAX_MIG];
	int nmig;
	double ovl_gbps;
	int ovl_intact;
	int repinned;		/* timed reps re-run: the pool grew in them */
	char ovl_err[BG_ERR_LEN];
	int modeled;				/* on the virtual GPU */
	uint64_t adam_params, state_bytes;
	double floor_ms, floor_ovl_ms;
	struct bg_adam adam[BG_MAX_ADAM];
	int nadam;
	int pieces;
	uint64_t piece_budget;
};

#ifdef __CUDACC__
#define BG_HD __host__ __device__
#else
#define BG_HD
#endif

/* The fill pattern and the init values: functions of the index alone. */
static inline BG_HD uint32_t bg_hash(uint64_t i, uint32_t salt)
{
	uint32_t x = (uint32_t)i ^ (uint32_t)(i >> 32) * 0x85ebca6bu ^ salt;

	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}

/* Uniform in [0, 1), exact in fp32. */
static inline BG_HD float bg_unit(uint64_t i, uint32_t salt)
{
	return (float)(bg_hash(i, salt) >> 8) * (1.0f / 16777216.0f);
}

/* Adam hyper-parameters of step t, computed once on the host in fp32. */
struct bg_hyper {
	float lr, b1, b2, ob1, ob2, eps, c1, c2;
};

/* bench_gpu_kern.cu: kernels, each enqueued on s. */
cudaError_t bgk_fill(void *p, size_t bytes, uint32_t salt, cudaStream_t s);
/* Waits; *bad gets the words that differ from salt's pattern. */
cudaError_t bgk_check(const void *p, size_t bytes, uint32_t salt,
		      cudaStream_t s, uint64_t *bad);
cudaError_t bgk_init_params(float *p, float *g, size_t n, cudaStream_t s);
/* m, v of params [off, off + n) of the whole state. */
cudaError_t bgk_init_state(float *m, float *v, size_t n, size_t off,
			   cudaStream_t s);
cudaError_t bgk_adam(float *p, const float *g, float *m, float *v, size_t n,
		     const struct bg_hyper *h, cudaStream_t s);
/* Waits; counts words of a and b that differ bitwise, and the largest |a-b|. */
cudaError_t bgk_compare(const float *a, const float *b, size_t n,
			cudaStream_t s, uint64_t *ndiff, float *max_diff);
/* The same step as bgk_adam on the CPU, same fp32 operations in order. */
void bg_cpu_adam(float *p, const float *g, float *m, float *v, size_t n,
		 const struct bg_hyper *h, int threads);
void bg_hyper_step(struct bg_hyper *h, int t);

/*
 * Event timing on a stream: start records the first event; stop records the
 * second (after whatever the host waited for in between), waits for it and
 * gives the milliseconds between the two as the device saw them.
 */
struct bg_clock {
	cudaEvent_t a, b;
};

/* bench_gpu.cu */
cudaError_t bg_clock_init(struct bg_clock *c);
void bg_clock_fini(struct bg_clock *c);
cudaError_t bg_clock_start(struct bg_clock *c, cudaStream_t s);
cudaError_t bg_clock_stop(struct bg_clock *c, cudaStream_t s, double *ms);
/* 1 when linked with the virtual GPU: every time is modeled. */
int bg_modeled(void);
double bg_now(void);
void bg_progress(const struct bg_opts *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void bg_set_err(char *err, const char *what, const char *why, int line);
void bg_um_log(void *arg, int level, const char *msg);

/* bench_gpu_adam.cu */
void bg_adam_table(const struct bg_opts *o, struct bg_results *res,
		   struct um_context *ctx, cudaStream_t s);

/* Checks: record "call: error" in err and jump to the function's fail. */
#define BG_CK(err, call) do {						\
		cudaError_t e_ = (call);				\
		if (e_ != cudaSuccess) {				\
			(void)cudaGetLastError();			\
			bg_set_err((err), #call, cudaGetErrorString(e_),\
				   __LINE__);				\
			goto fail;					\
		}							\
	} while (0)

#define BG_UK(err, call) do {						\
		int r_ = (int)(call);					\
		if (r_ < 0) {						\
			bg_set_err((err), #call, strerror(-r_), __LINE__);\
			goto fail;					\
		}							\
	} while (0)

#endif /* UMBENCH_BENCH_GPU_H */
