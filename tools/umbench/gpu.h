/* SPDX-License-Identifier: MIT */
/*
 * gpu.h - umbench's GPU part, umbench-gpu.so, a plugin of umbench's own.
 *
 * umbench holds no CUDA code: it reaches CUDA through libum (whose CUDA
 * backend is the plugin libum-cuda.so.0) and, for its GPU benchmarks and the
 * raw cudaHostAlloc of the pool section, through umbench-gpu.so, built where
 * the CUDA toolkit is (gpu.mk) from bench_gpu*.cu and gpu_entry.cu, linking
 * libum.so.0 and the CUDA runtime shared. umbench loads it with dlopen()
 * (gpu_load.c) when --gpu is given or the cuda backend is in use. It exports
 * one function, UMBENCH_GPU_ENTRY, which returns its table of operations;
 * both sides are built from the same tree, the size catches a mismatch.
 *
 * umbench_gpu_main() is the whole of --gpu. Pass the whole command line
 * (argv[0] is the program name); "--gpu" itself is accepted and ignored, and
 * the function parses the rest (--gpu-bytes, --adam-params, --json, ...; see
 * umbench(1)). Returns the process exit status: 0 all targets met or only
 * measured, 1 a target missed or a result differed, 2 bad usage, 4 no GPU
 * (skipped). Tables go to stdout, progress to stderr only when stderr is a
 * TTY. tests/gpu links the same objects into a program of its own.
 */
#ifndef UMBENCH_GPU_H
#define UMBENCH_GPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UMBENCH_GPU_PLUGIN	"umbench-gpu.so"
#define UMBENCH_GPU_ENTRY	"umbench_gpu_v1"

struct umbench_gpu {
	uint32_t size;			/* sizeof(struct umbench_gpu) */
	int (*main)(int argc, char **argv);
	/* Pinned host memory without libum: cudaHostAlloc, cudaFreeHost. */
	int (*host_alloc)(size_t len, void **out);	/* 0 or -ENOMEM */
	void (*host_free)(void *p);
};

typedef const struct umbench_gpu *(*umbench_gpu_fn)(void);

int umbench_gpu_main(int argc, char **argv);

/*
 * gpu_load.c, in umbench: the plugin, loaded once. NULL when it cannot be
 * loaded; *why then says what was tried and why it failed.
 */
const struct umbench_gpu *umbench_gpu_load(const char **why);

#ifdef __cplusplus
}
#endif

#endif /* UMBENCH_GPU_H */
