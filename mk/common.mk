# mk/common.mk - flags shared by every userspace Makefile in the tree.
# Include with: TOP := <path to repo root>; include $(TOP)/mk/common.mk

CC       ?= cc
CSTD     := -std=c11 -D_GNU_SOURCE
WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes \
            -Wmissing-prototypes -Wno-unused-parameter
OPT      ?= -O2 -g
CPPFLAGS += -I$(TOP)/libum/include -I$(TOP)/include/uapi -I$(TOP)/tests/harness
CFLAGS   += $(CSTD) $(WARN) $(OPT) -fPIC -pthread
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer \
             -fno-sanitize-recover=undefined

# CUDA: compiled in wherever the toolkit is installed. The runtime is linked
# statically and the driver API is reached through
# cudaGetDriverEntryPointByVersion, so binaries start without a driver.
CUDA_HOME ?= /usr/local/cuda
NVCC      ?= $(CUDA_HOME)/bin/nvcc
HAVE_CUDA ?= $(if $(wildcard $(CUDA_HOME)/include/cuda_runtime.h),1,0)
ifeq ($(HAVE_CUDA),1)
CUDA_CPPFLAGS := -DUM_HAVE_CUDA -I$(CUDA_HOME)/include
CUDA_LIBS     := -L$(CUDA_HOME)/lib64 -l:libcudart_static.a -ldl -lrt
endif

LIBUM_A   := $(TOP)/libum/build/libum.a
UM_LIBS   := $(LIBUM_A) -luring -lnuma -lxxhash $(CUDA_LIBS) -lpthread -lm

# The programs the packages ship (umbench, umtrain) link libum.so.0 instead,
# as a program built against the installed libum does, so that they reach
# CUDA only through libum's plugin (Documentation/packaging.rst). In the tree
# they find libum/build through a run path relative to themselves,
# UM_RUNPATH, which each Makefile sets; the packages set it empty (Debian
# forbids run paths).
LIBUM_SO   := $(TOP)/libum/build/libum.so
UM_SO_LIBS  = $(LIBUM_SO) -lpthread -lm \
	      $(if $(UM_RUNPATH),-Wl$(comma)-rpath$(comma)'$(UM_RUNPATH)')
comma := ,

# The release, from the one VERSION file: the soname's minor, libum.pc,
# umm.ko's MODULE_VERSION and dkms.conf, the tools' --version, the man
# pages' footers and the Debian packages all take it from there.
UM_VERSION := $(shell cat $(TOP)/VERSION)
CPPFLAGS   += -DUM_RELEASE='"$(UM_VERSION)"'
