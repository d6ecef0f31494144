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


def test_shim_small_allocations_packed():
    """10,000 live 4 KiB allocations within 1.2x their bytes plus a granule
    on the device, seen through memory_stats()' small_pool keys."""
    lib = cuda.shim()
    n = 10000
    with context(device_budget="128M", sim_capacity="128M") as ctx:
        cuda.attach(ctx)
        ptrs = [lib.um_torch_malloc(4096, 0, None) for _ in range(n)]
        assert all(ptrs) and lib.um_torch_last_error() == 0
        st = umtorch.memory_stats(ctx)
        dev = st["tier.device.current"]
        print("# %d live x 4 KiB: %d bytes on the device (%.3fx), "
              "%d segments" % (n, dev, dev / (n * 4096.0),
                               st["segment.small_pool.current"]))
        assert dev <= 1.2 * n * 4096 + 2 * MiB, st
        assert st["allocation.small_pool.current"] == n, st
        assert st["allocated_bytes.small_pool.current"] == n * 4096, st
        assert st["reserved_bytes.small_pool.current"] == dev, st
        lib.um_torch_free(ptrs[1], 4096, 0, None)	# a hole: split bytes
        st = umtorch.memory_stats(ctx)
        assert st["inactive_split_bytes.all.current"] >= 4096, st
        for p in ptrs[:1] + ptrs[2:]:
            lib.um_torch_free(p, 4096, 0, None)
        assert lib.um_torch_live() == 0 and lib.um_torch_last_error() == 0
        st = umtorch.memory_stats(ctx)
        assert st["allocation.small_pool.current"] == 0, st
        assert st["suballoc.largest_free_block"] == 2 * MiB, st
        cuda.detach()
        assert ctx.stats()["suballoc"]["segments"] == 0


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
