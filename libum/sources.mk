# libum/sources.mk - libum's sources and libraries, shared by libum/Makefile
# and tests/unit/Makefile (which compiles them again with sanitizers). Set
# LIBUM_DIR to this directory before including; include mk/common.mk first.
#
# The CUDA backend (backend_cuda*.c) is compiled where the toolkit is
# installed (HAVE_CUDA, mk/common.mk); every other source always is.
#
# The CUDA backend two ways (backend_plugin.h): LIBUM_SRCS, what the tree's
# static libum.a and tests compile, link it in (backend_cuda_builtin.c)
# where the toolkit is, or have none (backend_cuda_none.c);
# LIBUM_NOCUDA_SRCS, what libum.so and the installed libum.a are made of,
# load it (backend_load.c) from the plugin libum-cuda.so.0, made of
# LIBUM_PLUGIN_SRCS. The backend asks the tier table (tier.c) and writes
# sizes with units.c, which have no context: the plugin, with no libum
# symbols to bind to, has its own copy of each.
LIBUM_SRCS := $(wildcard $(LIBUM_DIR)/src/*.c)
LIBUM_NONE_SRC := $(LIBUM_DIR)/src/backend_cuda_none.c
LIBUM_LOAD_SRC := $(LIBUM_DIR)/src/backend_load.c
LIBUM_CUDA_SRCS := $(filter-out $(LIBUM_NONE_SRC), \
	$(wildcard $(LIBUM_DIR)/src/backend_cuda*.c))
LIBUM_NOCUDA_SRCS := $(filter-out $(LIBUM_CUDA_SRCS) $(LIBUM_NONE_SRC), \
	$(LIBUM_SRCS))
LIBUM_PLUGIN_SRCS := $(filter-out %/backend_cuda_builtin.c,$(LIBUM_CUDA_SRCS)) \
	$(LIBUM_DIR)/src/plugin/cuda_entry.c $(LIBUM_DIR)/src/tier.c \
	$(LIBUM_DIR)/src/units.c
LIBUM_CPPFLAGS := -I$(LIBUM_DIR)/include -I$(LIBUM_DIR)/src
LIBUM_LDLIBS :=

ifeq ($(HAVE_CUDA)$(if $(LIBUM_CUDA_SRCS),y,n),1y)
LIBUM_CPPFLAGS += $(CUDA_CPPFLAGS)
LIBUM_LDLIBS += $(CUDA_LIBS)
LIBUM_SRCS := $(filter-out $(LIBUM_LOAD_SRC) $(LIBUM_NONE_SRC),$(LIBUM_SRCS))
else
LIBUM_SRCS := $(filter-out $(LIBUM_CUDA_SRCS) $(LIBUM_LOAD_SRC),$(LIBUM_SRCS))
LIBUM_PLUGIN_SRCS :=
endif

LIBUM_LDLIBS := $(sort $(LIBUM_LDLIBS) -luring -lxxhash -lnuma) -lpthread -lm
