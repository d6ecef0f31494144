# tools/umbench/gpu.mk - the objects of `umbench --gpu`, included by
# tools/umbench/Makefile where HAVE_CUDA=1. Sets UMBENCH_GPU_OBJS (built under
# $(UMBENCH_GPU_B)) and UMBENCH_GPU_LIBS (static cudart: the binary needs no
# CUDA library at run time, only the driver).
#
# The .cu files are compiled without exceptions and thread-safe statics, so
# they need no libstdc++ and link with $(CC). -ffp-contract=off keeps the CPU
# Adam bit-identical to the GPU kernel (see bench_gpu_kern.cu).

UMBENCH_GPU_B ?= build
ifeq ($(HAVE_CUDA),1)
UMBENCH_GPU_SRCS := bench_gpu.cu bench_gpu_kern.cu bench_gpu_adam.cu bench_gpu_cpu.cu
UMBENCH_GPU_OBJS := $(patsubst %.cu,$(UMBENCH_GPU_B)/%.o,$(UMBENCH_GPU_SRCS))
UMBENCH_GPU_NVCCFLAGS ?= -O2 -arch=sm_90 -cudart static -Werror all-warnings \
	-Xcompiler -Wall,-Wextra,-Werror,-fno-exceptions,-fno-threadsafe-statics,-ffp-contract=off
UMBENCH_GPU_LIBS := $(CUDA_LIBS) -lpthread -lm

$(UMBENCH_GPU_OBJS): $(UMBENCH_GPU_B)/%.o: %.cu bench_gpu.h gpu.h
	@mkdir -p $(UMBENCH_GPU_B)
	$(NVCC) $(UMBENCH_GPU_NVCCFLAGS) -I$(TOP)/libum/include -I. -c -o $@ $<
else
UMBENCH_GPU_OBJS :=
UMBENCH_GPU_LIBS :=
endif
