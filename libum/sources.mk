# libum/sources.mk - libum's sources and libraries, shared by libum/Makefile
# and tests/unit/Makefile (which compiles them again with sanitizers). Set
# LIBUM_DIR to this directory before including; include mk/common.mk first.
#
# The CUDA backend (backend_cuda*.c) is compiled where the toolkit is
# installed (HAVE_CUDA, mk/common.mk); every other source always is.

LIBUM_SRCS := $(wildcard $(LIBUM_DIR)/src/*.c)
LIBUM_CUDA_SRCS := $(wildcard $(LIBUM_DIR)/src/backend_cuda*.c)
LIBUM_CPPFLAGS := -I$(LIBUM_DIR)/include -I$(LIBUM_DIR)/src
LIBUM_LDLIBS :=

ifeq ($(HAVE_CUDA)$(if $(LIBUM_CUDA_SRCS),y,n),1y)
LIBUM_CPPFLAGS += $(CUDA_CPPFLAGS)
LIBUM_LDLIBS += $(CUDA_LIBS)
else
LIBUM_SRCS := $(filter-out $(LIBUM_CUDA_SRCS),$(LIBUM_SRCS))
endif

LIBUM_LDLIBS := $(sort $(LIBUM_LDLIBS) -luring -lxxhash -lnuma) -lpthread -lm
