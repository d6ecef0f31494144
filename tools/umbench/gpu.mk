# tools/umbench/gpu.mk - umbench-gpu.so, the GPU part of umbench (gpu.h),
# included by tools/umbench/Makefile. With HAVE_CUDA=1 it sets
# UMBENCH_GPU_SO (built under $(UMBENCH_GPU_B)) and how to build it; without
# CUDA it is empty and umbench --gpu says that the plugin is missing.
#
# The plugin links libum.so.0 (umbench has loaded it already) and the CUDA
# runtime shared, like libum's own CUDA plugin: the static runtime cannot be
# dlopen()ed (page-aligned thread-local storage), and with one shared runtime
# the benchmark's kernels and libum's backend use the same CUDA context. Its
# run path to the runtime is CUDA_RUNPATH, as libum-cuda.so.0's (none in the
# package). It has its own copy of tools/common's JSON writer, the one part
# of libut it calls.
#
# The .cu files are compiled without exceptions and thread-safe statics, so
# they need no libstdc++ and link with $(CC). -ffp-contract=off keeps the CPU
# Adam bit-identical to the GPU kernel (see bench_gpu_kern.cu).

UMBENCH_GPU_B ?= build
ifeq ($(HAVE_CUDA),1)
UMBENCH_GPU_SRCS := bench_gpu.cu bench_gpu_kern.cu bench_gpu_adam.cu \
	bench_gpu_cpu.cu gpu_entry.cu
UMBENCH_GPU_CU_OBJS := $(UMBENCH_GPU_SRCS:%.cu=$(UMBENCH_GPU_B)/gpu/%.o)
UMBENCH_GPU_OBJS := $(UMBENCH_GPU_CU_OBJS) $(UMBENCH_GPU_B)/gpu/json.o
UMBENCH_GPU_SO := $(UMBENCH_GPU_B)/umbench-gpu.so
UMBENCH_GPU_NVCCFLAGS ?= -O2 -arch=sm_90 -Werror all-warnings \
	-Xcompiler -Wall,-Wextra,-Werror,-fPIC,-fno-exceptions,-fno-threadsafe-statics,-ffp-contract=off
CUDA_RUNPATH ?= $(CUDA_HOME)/lib64
comma := ,

$(UMBENCH_GPU_CU_OBJS): $(UMBENCH_GPU_B)/gpu/%.o: %.cu \
		bench_gpu.h gpu.h $(TOP)/tools/common/ut.h
	@mkdir -p $(@D)
	$(NVCC) $(UMBENCH_GPU_NVCCFLAGS) -I$(TOP)/libum/include -I. \
		-I$(TOP)/tools/common -c -o $@ $<

$(UMBENCH_GPU_B)/gpu/json.o: $(TOP)/tools/common/json.c $(TOP)/tools/common/ut.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(UMBENCH_GPU_SO): $(UMBENCH_GPU_OBJS) gpu.map $(LIBUM_SO)
	$(CC) -shared -Wl,--version-script=gpu.map -Wl,--no-undefined \
		-o $@ $(UMBENCH_GPU_OBJS) $(LDFLAGS) $(LIBUM_SO) \
		-L$(CUDA_HOME)/lib64 -lcudart \
		$(if $(CUDA_RUNPATH),-Wl$(comma)-rpath$(comma)$(CUDA_RUNPATH)) \
		-lpthread -lm
else
UMBENCH_GPU_SO :=
endif
