# um - top-level Makefile.
#
# Each component directory has its own Makefile (all, check, clean, and
# install where something is installed); this one runs them in dependency
# order and skips the directories that do not exist yet. `make help` lists
# the targets.

UM_VERSION := $(shell cat VERSION)
include mk/install.mk
export PREFIX DESTDIR LIBDIR INCDIR BINDIR SBINDIR MANDIR

# The components, in the order `make all` builds them and `make check`
# (scripts/check.sh) runs their suites: the test harness first, so that the
# suites after it can trust it; each directory's Makefile builds libum
# itself when it links it. VM_SUITES boot kernels in qemu (check-fast skips
# them).
SUITES := tests/harness libum tests/unit tests/soak tests/gpu tools examples \
	  bindings/python kmod tests/kmod tests/vm tests/e2e tests/docs \
	  tests/packaging
VM_SUITES := tests/kmod tests/vm tests/e2e
DIRS := $(patsubst %/Makefile,%,$(wildcard $(addsuffix /Makefile,$(SUITES))))
CHECK_ENV := MAKE="$(MAKE)" UM_BUILD_DIRS="$(DIRS)" UM_SUITES="$(SUITES)" \
	     UM_VM_SUITES="$(VM_SUITES)"

.PHONY: all check check-fast soak demo install uninstall install-dkms \
	uninstall-dkms deb clean deps help

all:
	+@set -e; for d in $(DIRS); do $(MAKE) -C $$d all; done

# The Debian packages and the VM rig's kernels (unpacked into
# /var/cache/um-kernels, not installed: the machine's boot is untouched).
deps:
	@scripts/deps.sh

# Every suite, including the module's selftests in qemu on both kernels.
# check.sh builds every directory first (a build failure is counted, and the
# suites that still build are run) and then runs each suite.
check:
	+@$(MAKE) --no-print-directory deps
	+@$(CHECK_ENV) scripts/check.sh

# The same without the VM suites (VM_SUITES).
check-fast:
	+@$(MAKE) --no-print-directory deps
	+@$(CHECK_ENV) UM_SKIP_VM=1 scripts/check.sh

# The long runs, not part of check (tests/soak/soak.sh; SOAK_* variables):
# the e2e scenarios SOAK_RUNS times per kernel (SOAK_RUNS_PER_BOOT runs in
# one boot), libum's stress program under ASan and TSan, the fill-rate sweep.
soak:
	+@$(MAKE) --no-print-directory deps
	+@$(MAKE) --no-print-directory -C tests/soak soak

# The kernel-assisted scene (scripts/demo.sh): on this machine where
# /dev/umm works, in the VM rig otherwise. It builds only what it runs; the
# quick sim-only trainer demo is `make -C examples demo`. DEMO_RATE=MiB/s:
# how fast node 0 (or the cgroup) fills (default 16). DEMO_SCENE=cgroup:
# the container scene instead, the trainer and umpressure --cgroup in one
# memory cgroup under its memory.max (scripts/demo.sh --cgroup).
DEMO_SCENE ?= node
demo:
	@case "$(DEMO_SCENE)" in node|cgroup) ;; *) \
		echo "DEMO_SCENE is node or cgroup, not '$(DEMO_SCENE)'" >&2; \
		exit 2 ;; esac
	+@$(MAKE) --no-print-directory deps
	+@$(MAKE) --no-print-directory -C tools/umpressure build/umpressure-static
	+@$(MAKE) --no-print-directory -C examples/demo
	@scripts/demo.sh $(if $(DEMO_RATE),--rate $(DEMO_RATE)) \
		$(if $(filter cgroup,$(DEMO_SCENE)),--cgroup)

# Userspace only: libum (and its headers, libum.pc), the tools, umtrain,
# the umtorch package, the man pages. The module is `make install-dkms`.
USERSPACE := $(filter libum tools examples bindings/python,$(DIRS))
MAN_PAGES := $(wildcard Documentation/man/*.[1-8])

install:
	+@set -e; for d in $(USERSPACE); do $(MAKE) -C $$d install; done
	@set -e; for p in $(MAN_PAGES); do \
		sec=$${p##*.}; d=$(DESTDIR)$(MANDIR)/man$$sec; \
		install -d $$d; \
		sed '1,3s/"um [0-9][0-9.]*"/"um $(UM_VERSION)"/' $$p > $$d/$${p##*/}; \
		chmod 0644 $$d/$${p##*/}; \
	done
	@if [ -z "$(DESTDIR)" ] && command -v ldconfig >/dev/null; then ldconfig; fi

# Removes what `make install` (same variables) installed: it installs into
# a scratch directory and deletes each of those paths under DESTDIR.
uninstall:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(MAKE) -s --no-print-directory install DESTDIR=$$tmp >/dev/null && \
	cd $$tmp && find . ! -type d | while read -r f; do \
		rm -f "$(DESTDIR)/$${f#./}"; done && \
	find . -type d -name umtorch | while read -r d; do \
		rm -rf "$(DESTDIR)/$${d#./}"; done
	@if [ -z "$(DESTDIR)" ] && command -v ldconfig >/dev/null; then ldconfig; fi

# umm.ko for DKMS: the source tree in /usr/src/umm-$(UM_VERSION), the udev
# rule (/dev/umm root:umm 0660), the modprobe and modules-load snippets.
# Without DESTDIR it also adds the umm group and runs dkms install.
install-dkms:
	+@$(MAKE) --no-print-directory -C kmod dkms-src SRCROOT=$(DESTDIR)/usr/src
	install -D -m 0644 dist/60-umm.rules $(DESTDIR)/etc/udev/rules.d/60-umm.rules
	install -D -m 0644 dist/modprobe-umm.conf $(DESTDIR)/etc/modprobe.d/umm.conf
	install -D -m 0644 dist/modules-load-umm.conf \
		$(DESTDIR)/etc/modules-load.d/umm.conf
	@if [ -z "$(DESTDIR)" ]; then set -e; \
		getent group umm >/dev/null || groupadd --system umm; \
		dkms status -m umm -v $(UM_VERSION) | grep -q . || \
			dkms add -m umm -v $(UM_VERSION); \
		dkms install -m umm -v $(UM_VERSION); \
		! command -v udevadm >/dev/null || udevadm control --reload; \
	fi

uninstall-dkms:
	@if [ -z "$(DESTDIR)" ] && command -v dkms >/dev/null && \
	    dkms status -m umm -v $(UM_VERSION) | grep -q .; then \
		dkms remove -m umm -v $(UM_VERSION) --all; fi
	rm -rf $(DESTDIR)/usr/src/umm-$(UM_VERSION)
	rm -f $(DESTDIR)/etc/udev/rules.d/60-umm.rules \
		$(DESTDIR)/etc/modprobe.d/umm.conf $(DESTDIR)/etc/modules-load.d/umm.conf

# Debian packages (debian/, see Documentation/packaging.rst) with
# dpkg-buildpackage; they land in build/deb/. Without the CUDA toolkit the
# libum-cuda0 package is left out (build profile pkg.um.nocuda).
deb:
	+@scripts/deb.sh

clean:
	+@for d in $(DIRS); do $(MAKE) -C $$d clean; done
	rm -rf build

help:
	@echo 'um - targets of the top-level Makefile'
	@echo '  all         build every component ($(DIRS))'
	@echo '  check       deps (packages, kernels), build, run every test'
	@echo '              suite incl. the VM ones; ends "N passed, N failed, N skipped",'
	@echo '              logs in build/check/'
	@echo '  check-fast  the same without the VM suites (UM_SKIP_VM=1)'
	@echo '  soak        long runs, not in check: e2e x SOAK_RUNS (20) per kernel,'
	@echo '              SOAK_RUNS_PER_BOOT (5) a boot, SOAK_PARALLEL=1 kernels at once;'
	@echo '              libum stress under ASan and TSan (SOAK_SECONDS, 60), the'
	@echo '              fill-rate sweep; tests/soak/soak.sh --help'
	@echo '  demo        the kernel-assisted scene (scripts/demo.sh): umm.ko warns,'
	@echo '              libum moves a trainer'"'"'s host copies off a filling node;'
	@echo '              DEMO_SCENE=cgroup: under a memory cgroup'"'"'s memory.max,'
	@echo '              spilled to disk; DEMO_RATE=MiB/s (16). VM rig without /dev/umm'
	@echo '  install     install libum, tools, umtrain, umtorch, man pages under'
	@echo '              $$(DESTDIR)$$(PREFIX) (PREFIX=$(PREFIX), LIBDIR=$(LIBDIR))'
	@echo '  uninstall   remove what install installed (same variables)'
	@echo '  install-dkms  umm.ko source for DKMS, udev rule, modprobe/modules-load'
	@echo '              snippets; without DESTDIR also the umm group, dkms install'
	@echo '  uninstall-dkms  undo install-dkms'
	@echo '  deb         Debian packages into build/deb/ (scripts/deb.sh)'
	@echo '  deps        install missing Debian packages, fetch the VM rig'"'"'s kernels'
	@echo '              into /var/cache/um-kernels, not installed, make the torch 2.x'
	@echo '              venv in /var/cache/um-venv (scripts/deps.sh; root; --dry-run'
	@echo '              says what it would do)'
	@echo '  clean       remove build outputs'
	@echo 'One component: make -C <dir> [all|check|clean]. One test program:'
	@echo '  <dir>/build/<test> -l | -t NAME | -f FIXTURE (see tests/harness/harness.h)'
