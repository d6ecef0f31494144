# SPDX-License-Identifier: MIT
"""Within budget at every instant (step 1, load_state_dict, a param group
added mid-run), atomic steps, validation up front, schedulers first."""

import errno
import io
import threading
import time
import warnings

import torch

import umtorch
from common import (BUDGET, context, model, raises, same_params, state_bytes,
                    train)


def device_peak_ok(ctx, off, what):
    """Device bytes (regions, plus plain state being moved in) never above
    the budget; returns the peak."""
    peak = max(off.peak_device, umtorch.memory_stats(ctx)[
        "tier.device.peak"])
    print("# %s: device peak %d, budget %d, plain state at most %d"
          % (what, peak, BUDGET, off.peak_plain))
    assert 0 < peak <= BUDGET, (what, peak, BUDGET)
    return peak


def test_step1_creates_state_bucket_by_bucket_within_budget():
    plain = model()
    train(plain, torch.optim.Adam(plain.parameters(), lr=1e-3), 3)
    with context() as ctx:
        m = model()
        opt = torch.optim.Adam(m.parameters(), lr=1e-3)
        off = umtorch.offload_optimizer(opt, ctx, model=m)
        umtorch.reset_peak_memory_stats(ctx)
        train(m, opt, 1)
        total = state_bytes(opt)
        assert total > 1.5 * BUDGET, (total, BUDGET)
        device_peak_ok(ctx, off, "step 1")
        # torch would hold all of it plain at once; here none is plain
        assert off.peak_plain == 0		# made in its regions
        train(m, opt, 2, seed=3)
        names = sorted(r.name for r in off.regions)
        assert "optim.2.weight" in names, names		# parameter names
        assert any("+" in n for n in names), names	# biases packed
        assert ctx.stats()["nomem"] == 0
    ref = model()
    ropt = torch.optim.Adam(ref.parameters(), lr=1e-3)
    train(ref, ropt, 1)
    train(ref, ropt, 2, seed=3)
    assert same_params(m, ref)


def test_load_state_dict_within_budget():
    m = model()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    train(m, opt, 2)
    buf = io.BytesIO()
    torch.save(opt.state_dict(), buf)
    with context() as ctx:
        m2 = model()
        m2.load_state_dict(m.state_dict())
        opt2 = torch.optim.Adam(m2.parameters(), lr=1e-3)
        off = umtorch.offload_optimizer(opt2, ctx)
        umtorch.reset_peak_memory_stats(ctx)
        buf.seek(0)
        opt2.load_state_dict(torch.load(buf))
        device_peak_ok(ctx, off, "load_state_dict")
        assert off.peak_plain == 0 and off.nbytes > BUDGET
        train(m2, opt2, 2, seed=5)
    train(m, opt, 2, seed=5)
    assert same_params(m, m2)


def test_param_group_added_mid_run_within_budget():
    def run(offload):
        torch.manual_seed(7)
        extra = torch.nn.Linear(512, 512)
        m = model()
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
        with context() as ctx:
            off = umtorch.offload_optimizer(opt, ctx) if offload else None
            train(m, opt, 2)
            opt.add_param_group({"params": extra.parameters(), "lr": 1e-2})
            if off:
                umtorch.reset_peak_memory_stats(ctx)
            x = torch.randn(8, 512)
            train(m, opt, 1, seed=4, extra=(extra, x))
            if off:
                device_peak_ok(ctx, off, "new param group")
                assert any(p is extra.weight for p in opt.state)
        return list(m.parameters()) + list(extra.parameters())
    for a, b in zip(run(False), run(True)):
        assert torch.equal(a, b)


def test_failing_step_changes_nothing():
    """A sparse gradient in the last bucket: Adam's own error, raised
    before any bucket ran, as plain torch raises before updating."""
    with context() as ctx:
        m = model()
        emb = torch.nn.Embedding(100, 8, sparse=True)
        opt = torch.optim.Adam(list(m.parameters()) + list(emb.parameters()),
                               lr=1e-3)
        umtorch.offload_optimizer(opt, ctx)
        train(m, opt, 2)
        before = [p.detach().clone() for p in m.parameters()]
        state = {k: v for k, v in opt.state_dict()["state"][0].items()}
        opt.zero_grad()
        m(torch.ones(2, 64)).sum().backward()
        emb(torch.tensor([1, 2])).sum().backward()
        try:
            opt.step()
            raise AssertionError("sparse gradient accepted")
        except RuntimeError as e:
            assert "sparse" in str(e), e
        assert all(torch.equal(a, b) for a, b in zip(before, m.parameters()))
        after = opt.state_dict()["state"][0]
        assert all(torch.equal(state[k], after[k]) for k in state)


def test_scheduler_created_first():
    """Frameworks make the optimizer and its scheduler together: offload
    after the scheduler, same bits, no 'step order' warning."""
    def run(offload):
        m = model()
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1 / (s + 1))
        with context() as ctx, warnings.catch_warnings():
            warnings.simplefilter("error")
            if offload:
                umtorch.offload_optimizer(opt, ctx)
            for _ in range(3):
                train(m, opt, 1)
                sched.step()
        if hasattr(opt.step, "_wrapped_by_lr_sched"):	# torch 2.x
            assert opt._opt_called
        else:
            assert opt._step_count == 3, opt._step_count
        return m
    assert same_params(run(False), run(True))


def test_validation_at_offload_time():
    with context() as ctx:
        m = model()
        opt = torch.optim.Adam(m.parameters())
        raises(-errno.EINVAL, umtorch.offload_optimizer, opt, ctx,
               model="m", kind=TypeError)
        e = raises(-errno.ENOMEM, umtorch.offload_optimizer, opt, ctx,
                   bucket_bytes="1M", model=m)	# a 2 MiB region each
        assert "0.weight" in str(e) and "bucket_bytes" in str(e), str(e)
        off = umtorch.offload_optimizer(opt, ctx, bucket_bytes="2M")
        train(m, opt, 1)
        assert ctx.stats()["nomem"] == 0
        off.detach()
        opt.step = lambda closure=None: None	# not a scheduler's wrapper
        e = raises(-errno.EBUSY, umtorch.offload_optimizer, opt, ctx)
        assert "wrapped" in str(e)


def restored_soon(off, want):
    """Residency of off's regions, polled for up to 10 s while want is
    true (on sim the restores backward starts run on a thread of their
    own); and whether any was acquired meanwhile."""
    deadline = time.monotonic() + 10
    held = False
    while True:
        infos = [r.info() for r in off.regions]
        held = held or any(i["acquired"] for i in infos)
        where = [i["residency"] for i in infos]
        if not want or "gpu0" in where or time.monotonic() > deadline:
            return where, held
        time.sleep(0.01)


def test_overlap_restores_during_backward():
    """With overlap the first bucket's regions are restored by backward's
    first gradient, before step(), from the ahead thread on sim, and
    released again at once (a backward no step follows holds nothing);
    without it they stay evicted; same bits."""
    def run(overlap):
        with context() as ctx:
            m = model()
            opt = torch.optim.Adam(m.parameters(), lr=1e-3)
            off = umtorch.offload_optimizer(opt, ctx, overlap=overlap)
            train(m, opt, 2)
            for r in off.regions:	# the last bucket stays: evict it too
                r.evict("host")
            ctx.wait_all()
            before = [r.info()["residency"] for r in off.regions]
            opt.zero_grad()
            m(torch.ones(4, 64)).sum().backward()
            where, held = restored_soon(off, overlap)
            names = [t.name for t in threading.enumerate()]
            assert not overlap or any(n.startswith("umtorch-ahead")
                                      for n in names), names
            opt.step()
            assert all(r.info()["acquired"] == 0 for r in off.regions)
            ev = ctx.stats()["migrations"]["evict_count"]
        return m, before, where, held, ev
    m1, before1, where1, held1, ev1 = run(True)
    m0, before0, where0, held0, ev0 = run(False)
    assert before1.count("gpu0") < where1.count("gpu0"), (before1, where1)
    assert where0 == before0, (before0, where0)
    assert not held0, held0
    print("# evictions: %d with overlap (behind each bucket), %d without"
          % (ev1, ev0))
    assert same_params(m0, m1)


def test_trailing_buckets_that_fit_stay_on_the_device():
    """The buckets a step ends with stay on the device as far as they fit
    the budget (not only the last one), so the next step, run the other
    way, restores no more than the LRU order without overlap does: here
    4 buckets of one granule under a 2-granule budget, 3 restores and 3
    evictions a step (4 and 4 when only the last one stayed)."""
    def run(overlap):
        with context() as ctx:
            m = model()
            opt = torch.optim.Adam(m.parameters(), lr=1e-3)
            off = umtorch.offload_optimizer(opt, ctx, overlap=overlap)
            train(m, opt, 3)
            before = ctx.stats()["migrations"]
            train(m, opt, 6, seed=5)
            after = ctx.stats()["migrations"]
            regions = len(off.regions)
            off.detach()
        return m, regions, [(after[k] - before[k]) / 6 for k in
                            ("restore_count", "evict_count")]
    m1, regions, (restores1, evicts1) = run(True)
    m0, _, (restores0, evicts0) = run(False)
    print("# restores/evictions a step: %.1f/%.1f with overlap, %.1f/%.1f "
          "without, %d regions" % (restores1, evicts1, restores0, evicts0,
                                   regions))
    assert restores1 <= restores0 and evicts1 <= evicts0, \
        (restores1, restores0, evicts1, evicts0)
    assert restores1 < regions - 1, (restores1, regions)
    assert same_params(m0, m1)


def test_detach_after_backward_releases_acquires_ahead():
    """Backward started the first bucket's restore (on the ahead thread);
    detaching before step() waits for it and releases it: every region is
    freed and the context closes with no leak."""
    with context() as ctx:
        m = model()
        opt = torch.optim.Adam(m.parameters(), lr=1e-3)
        off = umtorch.offload_optimizer(opt, ctx)
        train(m, opt, 2)
        opt.zero_grad()
        m(torch.ones(4, 64)).sum().backward()
        off.detach()
        assert ctx.stats()["regions"] == 0
        assert ctx.close() == 0
        train(m, opt, 1)		# a plain optimizer again
