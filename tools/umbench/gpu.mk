# tools/umbench/gpu.mk - the objects of `umbench --gpu`, included by
# tools/umbench/Makefile. With HAVE_CUDA=1 it sets UMBENCH_GPU_OBJS (built
# under $(UMBENCH_GPU_B)), UMBENCH_GPU_CPPFLAGS (-DUMBENCH_GPU) and
# UMBENCH_GPU_LIBS (static cudart: the binary needs no CUDA library at run
# time, only the driver); without CUDA all three are empty.
#
# The .cu files are compiled without exceptions and thread-safe statics, so
# they need no libstdc++ and link with $(CC). -ffp-contract=off keeps the CPU
# Adam bit-identical to the GPU kernel (see bench_gpu_kern.cu).

UMBENCH_GPU_B ?= build
ifeq ($(HAVE_CUDA),1)
UMBENCH_GPU_SRCS := bench_gpu.cu bench_gpu_kern.cu bench_gpu_adam.cu bench_gpu_cpu.cu
UMBENCH_GPU_OBJS := $(patsubst %.cu,$(UMBENCH_GPU_B)/%.o,$(UMBENCH_GPU_SRCS))
# umbench.c calls umbench_gpu_main() for --gpu only with this.
UMBENCH_GPU_CPPFLAGS := -DUMBENCH_GPU
UMBENCH_GPU_NVCCFLAGS ?= -O2 -arch=sm_90 -cudart static -Werror all-warnings \
	-Xcompiler -Wall,-Wextra,-Werror,-fno-exceptions,-fno-threadsafe-statics,-ffp-contract=off
UMBENCH_GPU_LIBS := $(CUDA_LIBS) -lpthread -lm

# bench_gpu.cu writes its JSON with tools/common's writer (json.c, in the
# libut the tool links).
$(UMBENCH_GPU_OBJS): $(UMBENCH_GPU_B)/%.o: %.cu bench_gpu.h gpu.h \
		$(TOP)/tools/common/ut.h
	@mkdir -p $(UMBENCH_GPU_B)
	$(NVCC) $(UMBENCH_GPU_NVCCFLAGS) -I$(TOP)/libum/include -I. \
		-I$(TOP)/tools/common -c -o $@ $<
else
UMBENCH_GPU_OBJS :=
UMBENCH_GPU_CPPFLAGS :=
UMBENCH_GPU_LIBS :=
endif
