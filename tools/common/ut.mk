# ut.mk - how a tool links tools/common (include after mk/common.mk).
# Needs TOP. Tools add $(UT_CPPFLAGS) and link $(UT_LIBS); their rules
# should depend on $(UT_LIB) and build it with $(MAKE) -C $(UT_DIR).
UT_DIR      := $(TOP)/tools/common
UT_LIB      := $(UT_DIR)/build/libut.a
UT_CPPFLAGS := -I$(UT_DIR)
UT_LIBS     := $(UT_LIB) -lsmartcols -lm
# Static programs: the same calls, tables without libsmartcols.
UT_STATIC_LIB  := $(UT_DIR)/build/libut-static.a
UT_STATIC_LIBS := $(UT_STATIC_LIB) -lm
UT_JSONCHECK := $(UT_DIR)/build/ut-jsoncheck
