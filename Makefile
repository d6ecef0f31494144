# um - top-level Makefile.
#
# Each component directory has its own Makefile (all, check, clean, and
# install where something is installed); this one runs them in dependency
# order and skips the directories that do not exist yet. `make help` lists
# the targets.

PREFIX  ?= /usr/local
DESTDIR ?=
export PREFIX DESTDIR

# Build order: the library first, then what links it, then the tests.
COMPONENTS := libum tools examples bindings/python tests/harness tests/unit tests/soak \
	      tests/gpu kmod tests/kmod tests/vm tests/e2e
DIRS := $(patsubst %/Makefile,%,$(wildcard $(addsuffix /Makefile,$(COMPONENTS))))

.PHONY: all check check-fast soak demo install clean deps help

all:
	+@set -e; for d in $(DIRS); do $(MAKE) -C $$d all; done

deps:
	@scripts/deps.sh

# Every suite, including the module's selftests in qemu on both kernels.
# check.sh builds every directory first (a build failure is counted, and the
# suites that still build are run) and then runs each suite.
check:
	+@$(MAKE) --no-print-directory deps
	+@MAKE="$(MAKE)" UM_BUILD_DIRS="$(DIRS)" scripts/check.sh

# The same without the VM suites (tests/kmod, tests/vm, tests/e2e).
check-fast:
	+@$(MAKE) --no-print-directory deps
	+@MAKE="$(MAKE)" UM_BUILD_DIRS="$(DIRS)" UM_SKIP_VM=1 scripts/check.sh

# The long runs, not part of check (tests/soak/soak.sh; SOAK_* variables):
# the e2e scenarios SOAK_RUNS times per kernel, libum's stress program under
# ASan and TSan, the fill-rate sweep.
soak:
	+@$(MAKE) --no-print-directory deps
	+@$(MAKE) --no-print-directory -C tests/soak soak

# The kernel-assisted scene (scripts/demo.sh): on this machine where
# /dev/umm works, in the VM rig otherwise. It builds only what it runs; the
# quick sim-only trainer demo is `make -C examples demo`. DEMO_RATE=MiB/s:
# how fast node 0 fills (default 16).
demo:
	+@$(MAKE) --no-print-directory deps
	+@$(MAKE) --no-print-directory -C tools/umpressure build/umpressure-static
	+@$(MAKE) --no-print-directory -C examples/demo
	@scripts/demo.sh $(if $(DEMO_RATE),--rate $(DEMO_RATE))

install: all
	+@set -e; for d in $(DIRS); do \
		if $(MAKE) -C $$d -n install >/dev/null 2>&1; then \
			$(MAKE) -C $$d install; fi; done
	+@set -e; for p in Documentation/man/*.[0-9]; do \
		sec=$${p##*.}; \
		install -d $(DESTDIR)$(PREFIX)/share/man/man$$sec; \
		install -m 0644 $$p $(DESTDIR)$(PREFIX)/share/man/man$$sec/; \
	done

clean:
	+@for d in $(DIRS); do $(MAKE) -C $$d clean; done
	rm -rf build

help:
	@echo 'um - targets of the top-level Makefile'
	@echo '  all         build every component ($(DIRS))'
	@echo '  check       install missing packages (deps), build, run every test'
	@echo '              suite incl. the VM ones; ends "N passed, N failed, N skipped",'
	@echo '              logs in build/check/'
	@echo '  check-fast  the same without the VM suites (UM_SKIP_VM=1)'
	@echo '  soak        long runs, not in check: e2e x SOAK_RUNS (20) per kernel,'
	@echo '              libum stress under ASan and TSan (SOAK_SECONDS, 60), the'
	@echo '              fill-rate sweep; tests/soak/soak.sh --help'
	@echo '  demo        deps + all, then run the umtrain demo (examples/)'
	@echo '  install     install libum, tools, man pages under $$(DESTDIR)$$(PREFIX)'
	@echo '              (PREFIX=$(PREFIX))'
	@echo '  deps        install missing Debian packages (scripts/deps.sh; root)'
	@echo '  clean       remove build outputs'
	@echo 'One component: make -C <dir> [all|check|clean]. One test program:'
	@echo '  <dir>/build/<test> -l | -t NAME | -f FIXTURE (see tests/harness/harness.h)'
