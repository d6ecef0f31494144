# SPDX-License-Identifier: MIT
"""libumtorch.so through ctypes (as torch would call it) and the helper
that installs it as torch's CUDA allocator."""

import ctypes
import errno

import torch

import umtorch
from umtorch import cuda
from common import Skip, context, raises

MiB = 1 << 20


def test_shim_round_trip_in_shared_context():
    lib = cuda.shim()
    with context() as ctx:
        cuda.attach(ctx)
        p = lib.um_torch_malloc(3 * MiB, 0, None)
        assert p and lib.um_torch_last_error() == 0
        ctypes.memset(p, 1, 3 * MiB)
        assert ctx.stats()["regions"] == 1 and lib.um_torch_live() == 1
        st = umtorch.memory_stats(ctx)		# the shim's own counters
        assert st["shim.live_allocations"] == 1, st
        assert st["allocated_bytes.all.current"] >= 3 * MiB, st
        raises(-errno.EBUSY, cuda.detach)
        lib.um_torch_free(p, 3 * MiB, 0, None)
        assert lib.um_torch_last_error() == 0
        assert ctx.stats()["regions"] == 0
        cuda.detach()


def test_shim_bad_calls_do_not_crash():
    lib = cuda.shim()
    with context() as ctx:
        cuda.attach(ctx)
        before = lib.um_torch_error_count()
        assert not lib.um_torch_malloc(-1, 0, None)
        assert lib.um_torch_last_error() == -errno.EINVAL
        assert not lib.um_torch_malloc(1 << 50, 0, None)
        assert lib.um_torch_last_error() == -errno.E2BIG
        p = lib.um_torch_malloc(MiB, 0, None)
        lib.um_torch_free(p + 8, MiB, 0, None)		# interior
        assert lib.um_torch_last_error() == -errno.EINVAL
        lib.um_torch_free(0x1000, 64, 0, None)		# unknown
        assert lib.um_torch_last_error() == -errno.ENOENT
        lib.um_torch_free(p, MiB, 0, None)
        lib.um_torch_free(p, MiB, 0, None)		# double free
        assert lib.um_torch_last_error() == -errno.ENOENT
        assert cuda.errors() == (before + 5, -errno.ENOENT)
        cuda.detach()
        assert ctx.close() == 0


def test_install_allocator():
    if not torch.cuda.is_available():
        raises(-errno.ENODEV, cuda.install_allocator)
        raise Skip("no CUDA device: the refusal was checked, not the "
                   "allocator inside torch")
    with umtorch.Context(backend="cuda", device_budget="1G") as ctx:
        cuda.install_allocator(ctx)
        x = torch.ones(1 << 20, device="cuda")
        assert x.sum().item() == 1 << 20
        assert ctx.stats()["regions"] >= 1
        del x
