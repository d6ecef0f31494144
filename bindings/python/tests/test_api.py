# SPDX-License-Identifier: MIT
"""Context, Region and offload API: config, bad input, teardown rules."""

import errno
import logging
import math
import os
import threading
import time

import torch

import umtorch
from common import BUDGET, context, model, raises, train


def test_config_sizes_and_environment():
    with context(device_budget="3M") as ctx:
        assert ctx.budget() == 3 << 20 and ctx.backend == "sim"
    os.environ["LIBUM_DEVICE_BUDGET"] = "5M"
    os.environ["LIBUM_BACKEND"] = "sim"
    try:
        with umtorch.Context() as ctx:
            assert ctx.budget() == 5 << 20
    finally:
        del os.environ["LIBUM_DEVICE_BUDGET"], os.environ["LIBUM_BACKEND"]
    assert umtorch.parse_size("2G", "x") == 2 << 30
    assert umtorch.parse_size("512KiB", "x") == 512 << 10


def test_bad_config_raises_with_errno():
    raises(-errno.EINVAL, umtorch.Context, backend="tpu",
           kind=umtorch.UmTypeError)
    raises(-errno.EINVAL, umtorch.Context, device_budget=-1,
           kind=umtorch.UmValueError)
    raises(-errno.EINVAL, umtorch.Context, device_budget="lots",
           kind=ValueError)
    raises(-errno.EINVAL, umtorch.Context, sim_capacity=1.5,
           kind=TypeError)
    e = raises(-errno.EINVAL, umtorch.Context, backend="sim",
               chunk_bytes=1)	# below libum's minimum: its ERR line
    assert "chunk_bytes" in str(e), str(e)


def test_host_budget_field():
    """host_budget= is struct um_config's LIBUM_0.2 field: libum watches
    it (the pressure loop says so) and refuses what it refuses in C."""
    lines = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())

    keep = Keep()
    logger = logging.getLogger("umtorch")
    logger.addHandler(keep)
    level = logger.level
    logger.setLevel(logging.INFO)
    os.environ["LIBUM_HOST_BUDGET"] = "2G"	# the field wins
    try:
        with context(host_budget="64G", log_level="info") as ctx:
            assert ctx.budget() == BUDGET
        assert any("host budget" in l and "65536 MiB" in l
                   for l in lines), lines
    finally:
        del os.environ["LIBUM_HOST_BUDGET"]
        logger.removeHandler(keep)
        logger.setLevel(level)
    for bad in (0, "0", -1, "lots", 1 << 64):
        raises(-errno.EINVAL, umtorch.Context, backend="sim",
               host_budget=bad, kind=ValueError)
    e = raises(-errno.EINVAL, umtorch.Context, backend="sim",
               host_budget="512K")	# below libum's 1M: its ERR line
    assert "host_budget" in str(e) and "minimum" in str(e), str(e)


def test_region_bad_input():
    with context() as ctx:
        raises(-errno.EINVAL, ctx.alloc, -4096, kind=umtorch.UmValueError)
        raises(-errno.EINVAL, ctx.alloc, 0)		# libum: bytes > 0
        raises(-errno.E2BIG, ctx.alloc, 1 << 50)
        raises(-errno.EINVAL, ctx.alloc, 4096, "weights",
               kind=umtorch.UmTypeError)
        raises(-errno.EINVAL, ctx.alloc, 4096, name=7, kind=TypeError)
        raises(-errno.EINVAL, ctx.alloc, 4096, device=-1, kind=ValueError)
        r = ctx.alloc(4096)
        raises(-errno.EINVAL, r.acquire, tier="gpu", kind=TypeError)
        raises(-errno.EINVAL, r.acquire, stream="s", kind=TypeError)
        raises(-errno.EPERM, r.release)		# not acquired
        with r:
            raises(-errno.EINVAL, r.tensor, "float", 4, kind=TypeError)
            raises(-errno.EINVAL, r.tensor, torch.float32, 2048,
                   kind=ValueError)			# past the end
            raises(-errno.EINVAL, r.tensor, torch.float32, 4, offset=2,
                   kind=ValueError)			# misaligned
        r.free()
        raises(-errno.ENOENT, r.free)			# double free
        raises(-errno.ENOENT, r.acquire)
        assert ctx.stats()["regions"] == 0


def test_acquire_timeout_waits_for_room():
    """timeout= is um_acquire_timeout: bad values refused before libum is
    called; waits for another thread's release; ETIMEDOUT, EDEADLK and
    ENOMEM as the C call gives them."""
    with context(device_budget="2M") as ctx:
        a = ctx.alloc("2M", name="a")
        b = ctx.alloc("2M", name="b")
        for bad, kind in ((True, TypeError), ("1", TypeError),
                          (-1, ValueError), (math.nan, ValueError)):
            raises(-errno.EINVAL, b.acquire, timeout=bad, kind=kind)
        a.acquire()
        raises(-errno.EDEADLK, b.acquire, timeout=math.inf)  # only we hold
        raises(-errno.ENOMEM, b.acquire, timeout=0)
        held = threading.Event()

        def holder():
            a.acquire()
            held.set()
            time.sleep(0.2)
            a.release()

        a.release()
        t = threading.Thread(target=holder)
        t.start()
        held.wait()
        raises(-errno.ETIMEDOUT, b.acquire, timeout=0.01)
        b.acquire(timeout=math.inf)		# room once holder releases
        assert not a.info()["acquired"]
        t.join()
        assert b.info()["acquired"]
        b.release()
        raises(-errno.ENOMEM, ctx.alloc("3M").acquire, timeout=1)
        assert b.acquire(timeout=5) is b
        b.release()


def test_views_emptied_at_free():
    with context() as ctx:
        r = ctx.alloc("1M", kind="optimizer_state", name="x")
        with r:
            t = r.tensor(torch.float32, (512, 512))
            t.fill_(2.0)
            assert t.sum().item() == 2.0 * 512 * 512
            assert t.data_ptr() == r.ptr
        r.free()
        assert t.numel() == 0		# no dangling pointer left in t


def test_use_after_close():
    ctx = context()
    r = ctx.alloc(4096)
    m = model()
    off = umtorch.offload_optimizer(torch.optim.Adam(m.parameters()), ctx)
    train(m, off.optimizer, 1)
    assert ctx.close() == 1			# r was still alive
    assert ctx.closed and ctx.close() == 0
    for fn in (ctx.stats, ctx.budget, r.acquire, r.free, lambda: r.ptr,
               lambda: ctx.alloc(4096),
               lambda: umtorch.offload_optimizer(
                   torch.optim.Adam(m.parameters()), ctx)):
        raises(-errno.EBADF, fn)
    raises(-errno.EBADF, off.step)		# detached by close()


def test_offload_bad_input():
    with context() as ctx:
        m = model()
        raises(-errno.EINVAL, umtorch.offload_optimizer, "adam", ctx,
               kind=TypeError)
        raises(-errno.EINVAL, umtorch.offload_optimizer,
               torch.optim.Adam(m.parameters()), "ctx", kind=TypeError)
        raises(-errno.EINVAL, umtorch.offload_optimizer,
               torch.optim.LBFGS(m.parameters()), ctx, kind=ValueError)
        raises(-errno.EINVAL, umtorch.offload_optimizer,
               torch.optim.Adam(m.parameters()), ctx, min_bytes=-1,
               kind=ValueError)
        opt = torch.optim.Adam(m.parameters())
        off = umtorch.offload_optimizer(opt, ctx)
        raises(-errno.EBUSY, umtorch.offload_optimizer, opt, ctx)
        off.detach()
        off.detach()				# idempotent
        assert "step" not in opt.__dict__
        assert ctx.stats()["regions"] == 0


def test_state_larger_than_budget_refused_at_offload():
    """A parameter whose state cannot fit half the budget (its bucket holds
    it plain and in a region for a moment): refused by offload_optimizer()
    with -ENOMEM naming the parameter, before any step; nothing changed."""
    with context(device_budget="2M") as ctx:
        big = torch.nn.Linear(1024, 1024)
        opt = torch.optim.Adam(big.parameters())
        e = raises(-errno.ENOMEM, umtorch.offload_optimizer, opt, ctx,
                   model=big)
        assert "weight" in str(e) and "budget" in str(e), str(e)
        assert "step" not in opt.__dict__ and ctx.stats()["regions"] == 0
        assert ctx.close() == 0
