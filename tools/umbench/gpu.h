/* SPDX-License-Identifier: MIT */
/*
 * gpu.h - umbench's GPU benchmarks (umbench --gpu), built only with CUDA.
 *
 * umbench.c calls umbench_gpu_main() when --gpu is given and the tool was
 * built with HAVE_CUDA=1 (UM_HAVE_CUDA defined). Pass the whole command line
 * (argv[0] is the program name); "--gpu" itself is accepted and ignored, and
 * the function parses the rest (--gpu-bytes, --adam-params, --json, ...; see
 * umbench(1)).
 * Returns the process exit status: 0 all targets met or only measured,
 * 1 a target missed or a result differed, 2 bad usage, 4 no GPU (skipped).
 * Tables go to stdout, progress to stderr only when stderr is a TTY.
 */
#ifndef UMBENCH_GPU_H
#define UMBENCH_GPU_H

#ifdef __cplusplus
extern "C" {
#endif

int umbench_gpu_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif /* UMBENCH_GPU_H */
