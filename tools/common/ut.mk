# ut.mk - how a program links tools/common (include after mk/common.mk).
# Needs TOP. Programs add $(UT_CPPFLAGS) and link $(UT_LIBS); their rules
# should depend on $(UT_LIB) and build it with $(MAKE) -C $(UT_DIR).
UT_DIR      := $(TOP)/tools/common
UT_LIB      := $(UT_DIR)/build/libut.a
UT_CPPFLAGS := -I$(UT_DIR)
UT_LIBS     := $(UT_LIB) -lsmartcols -lm
# Static programs: the same calls, tables without libsmartcols.
UT_STATIC_LIB  := $(UT_DIR)/build/libut-static.a
UT_STATIC_LIBS := $(UT_STATIC_LIB) -lm
UT_JSONCHECK := $(UT_DIR)/build/ut-jsoncheck

# The stanza every tool in tools/<name>/ shares. A tool sets, before the
# include:
#   TOOL       its name: build/$(TOOL) is linked from $(TOOL_OBJS)
#   TOOL_SRCS  its .c files; TOOL_HDRS the headers they include
#   TOOL_OBJS  extra objects (optional); TOOL_LIBS what it links besides
#              libut (optional)
# and then lists its programs after "all:" and writes check and install.
# build/$(TOOL)-static is there for the tools the VM rig carries.
ifdef TOOL
include $(TOP)/mk/install.mk
B      := build
CPPFLAGS += $(UT_CPPFLAGS)
TOOL_OBJS := $(TOOL_SRCS:%.c=$(B)/%.o) $(TOOL_OBJS)

.PHONY: all check clean install FORCE
.DEFAULT_GOAL := all
all:

$(B):
	mkdir -p $@

$(B)/%.o: %.c $(TOOL_HDRS) $(UT_DIR)/ut.h $(UT_DIR)/knobs.h | $(B)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(B)/$(TOOL): $(TOOL_OBJS) $(UT_LIB)
	$(CC) $(CFLAGS) -o $@ $(TOOL_OBJS) $(UT_LIBS) $(TOOL_LIBS) $(LDFLAGS)

$(B)/$(TOOL)-static: $(TOOL_OBJS) $(UT_STATIC_LIB)
	$(CC) $(CFLAGS) -static -o $@ $(TOOL_OBJS) $(UT_STATIC_LIBS) \
		$(TOOL_LIBS)

$(UT_LIB) $(UT_STATIC_LIB) &: FORCE
	@$(MAKE) -s -C $(UT_DIR) all

clean:
	rm -rf $(B)
endif
