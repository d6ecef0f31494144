# libum/sources.mk - libum's sources and the features they bring, shared by
# libum/Makefile and tests/unit/Makefile (which compiles them again with
# sanitizers). Set LIBUM_DIR to this directory before including; include
# mk/common.mk first.
#
# Parts written by other engineers are compiled when their files exist, so
# the tree builds at every step: backend_cuda*.c (with the CUDA toolkit),
# spill.c, pressure.c, numa.c. Each present part defines UM_HAVE_<PART>=1.

LIBUM_SRCS := $(wildcard $(LIBUM_DIR)/src/*.c)
LIBUM_CUDA_SRCS := $(wildcard $(LIBUM_DIR)/src/backend_cuda*.c)
LIBUM_CPPFLAGS := -I$(LIBUM_DIR)/include -I$(LIBUM_DIR)/src
LIBUM_LDLIBS := -lpthread

ifeq ($(HAVE_CUDA)$(if $(LIBUM_CUDA_SRCS),y,n),1y)
LIBUM_CPPFLAGS += $(CUDA_CPPFLAGS)
LIBUM_LDLIBS += $(CUDA_LIBS)
else
LIBUM_SRCS := $(filter-out $(LIBUM_CUDA_SRCS),$(LIBUM_SRCS))
endif

define libum_feature
ifneq ($(wildcard $(LIBUM_DIR)/src/$(1).c),)
LIBUM_CPPFLAGS += -DUM_HAVE_$(2)=1
LIBUM_LDLIBS += $(3)
endif
endef
$(eval $(call libum_feature,spill,SPILL,-luring -lxxhash))
$(eval $(call libum_feature,pressure,PRESSURE,-luring))
$(eval $(call libum_feature,numa,NUMA,-lnuma))
LIBUM_LDLIBS := $(sort $(filter-out -lpthread,$(LIBUM_LDLIBS))) -lpthread -lm
