# mk/install.mk - where `make install` puts things (include after common.mk).
# Every directory may be set on the command line; DESTDIR is prepended to
# all of them. LIBDIR defaults to the multiarch directory (lib/x86_64-
# linux-gnu on Debian amd64), as Debian's packages and ld.so.conf expect.
PREFIX  ?= /usr/local
DESTDIR ?=
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
LIBDIR  ?= $(PREFIX)/lib$(if $(MULTIARCH),/$(MULTIARCH))
INCDIR  ?= $(PREFIX)/include
BINDIR  ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
MANDIR  ?= $(PREFIX)/share/man
