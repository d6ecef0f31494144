// SPDX-License-Identifier: MIT
/*
 * umbench_gpu_main.c - `umbench --gpu` as a program of its own, for the GPU
 * machine (tests/gpu/run-on-device.sh): same code as umbench links.
 */
#include "gpu.h"

int main(int argc, char **argv)
{
	return umbench_gpu_main(argc, argv);
}
