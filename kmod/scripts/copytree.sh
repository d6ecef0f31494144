#!/bin/sh
# copytree.sh TOP DIR - copy what Kbuild needs to build umm.ko out of the
# tree at TOP (kmod/, include/, VERSION) into DIR, without build outputs,
# so each kernel (the VM rig's, the demo's) builds in a copy of its own.
# Build it with: make -C /lib/modules/<ver>/build M=DIR/kmod modules
set -eu
top=$1 dir=$2
mkdir -p "$dir"
tar -C "$top" -cf - --exclude='*.o' --exclude='*.ko' --exclude='*.mod' \
	--exclude='*.mod.c' --exclude='.*.cmd' --exclude='Module.symvers' \
	--exclude='modules.order' --exclude=build kmod include VERSION |
	tar -C "$dir" -xf -
