# SPDX-License-Identifier: MIT
"""PyTorch-style loops around an offloaded optimizer: backward passes that
no step follows (eval, skipped steps under a GradScaler-like loop, a
closure that raises) and optimizers re-created over the same parameters
leave no region acquired, no budget taken and nothing behind; each under
overlap=True and overlap=False, bits compared with plain torch."""

import gc

import torch

import umtorch
from umtorch.optim import _ahead_pool
from common import context, model, same_params


def settle():
    """Wait for the ahead thread (restores backward started on sim)."""
    _ahead_pool().submit(lambda: None).result()


def nothing_acquired(ctx):
    settle()
    held = [(r.name, r.info()["acquired"]) for r in ctx._regions.values()
            if not r.freed and r.info()["acquired"]]
    assert not held, held


def batch(gen):
    return torch.randn(64, 64, generator=gen), \
        torch.randint(0, 10, (64,), generator=gen)


def loss_of(m, gen):
    x, y = batch(gen)
    return torch.nn.functional.cross_entropy(m(x), y)


def scaler_loop(m, opt, steps, skip, gen):
    """GradScaler's pattern: backward every iteration, the step skipped
    where the (pretend) scaled gradients overflowed."""
    for i in range(steps):
        opt.zero_grad()
        loss_of(m, gen).backward()
        if i in skip:
            continue
        opt.step()


def both(fn):
    for overlap in (True, False):
        fn(overlap)


def test_eval_backward_then_collected_frees_everything():
    def run(overlap):
        ref = model()
        ropt = torch.optim.Adam(ref.parameters(), lr=1e-3)
        with context() as ctx:
            m = model()
            opt = torch.optim.Adam(m.parameters(), lr=1e-3)
            umtorch.offload_optimizer(opt, ctx, overlap=overlap)
            for o, mm in ((ropt, ref), (opt, m)):
                g = torch.Generator().manual_seed(3)
                scaler_loop(mm, o, 2, (), g)
                mm.zero_grad()
                loss_of(mm, g).backward()	# eval: no step follows
            nothing_acquired(ctx)
            del opt, o
            gc.collect()
            assert ctx.stats()["regions"] == 0, ctx.stats()["regions"]
            # the budget is free again: a new optimizer steps and offloads
            for mm in (ref, m):
                mm.zero_grad()
            opt2 = torch.optim.Adam(m.parameters(), lr=1e-3)
            ropt2 = torch.optim.Adam(ref.parameters(), lr=1e-3)
            off = umtorch.offload_optimizer(opt2, ctx, overlap=overlap)
            for o, mm in ((ropt2, ref), (opt2, m)):
                scaler_loop(mm, o, 3, (), torch.Generator().manual_seed(4))
            assert len(off.regions) > 0
            assert all(isinstance(s, umtorch.ParamState)
                       for s in opt2.state.values())
            assert ctx.stats()["nomem"] == 0, ctx.stats()["nomem"]
            del opt2, off, o
            gc.collect()
            assert ctx.close() == 0
        assert same_params(m, ref)
    both(run)


def test_skipped_steps_leave_nothing_acquired():
    def run(overlap):
        ref = model()
        scaler_loop(ref, torch.optim.AdamW(ref.parameters(), lr=1e-3), 8,
                    (1, 4, 5), torch.Generator().manual_seed(5))
        with context() as ctx:
            m = model()
            opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
            umtorch.offload_optimizer(opt, ctx, overlap=overlap)
            scaler_loop(m, opt, 8, (1, 4, 5),
                        torch.Generator().manual_seed(5))
            opt.zero_grad()
            loss_of(m, torch.Generator()).backward()	# skipped, last
            nothing_acquired(ctx)
            assert ctx.stats()["nomem"] == 0
            del opt
            gc.collect()
            assert ctx.stats()["regions"] == 0
            assert ctx.close() == 0
        # the last, skipped backward changed no parameter
        assert same_params(m, ref)
    both(run)


def test_closure_that_raises():
    def run(overlap):
        with context() as ctx:
            m = model()
            opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
            umtorch.offload_optimizer(opt, ctx, overlap=overlap)
            g = torch.Generator().manual_seed(6)
            scaler_loop(m, opt, 2, (), g)

            def closure():
                m.zero_grad()
                loss_of(m, g).backward()
                raise FloatingPointError("loss is nan")
            try:
                opt.step(closure)
                raise AssertionError("the closure's error was lost")
            except FloatingPointError:
                pass
            nothing_acquired(ctx)
            del opt, closure
            gc.collect()
            assert ctx.stats()["regions"] == 0
            assert ctx.close() == 0
    both(run)


def test_recreated_optimizer_over_same_parameters():
    """A second optimizer over the same parameters while the first is
    still alive: the idle one takes no budget on backward, the new one's
    state is all in regions, the bits are plain torch's."""
    def run(overlap):
        ref = model()
        g = torch.Generator().manual_seed(7)
        scaler_loop(ref, torch.optim.Adam(ref.parameters(), lr=1e-3), 2,
                    (), g)
        scaler_loop(ref, torch.optim.Adam(ref.parameters(), lr=5e-4), 4,
                    (), g)
        with context() as ctx:
            m = model()
            g = torch.Generator().manual_seed(7)
            old = torch.optim.Adam(m.parameters(), lr=1e-3)
            umtorch.offload_optimizer(old, ctx, overlap=overlap)
            scaler_loop(m, old, 2, (), g)
            new = torch.optim.Adam(m.parameters(), lr=5e-4)
            off = umtorch.offload_optimizer(new, ctx, overlap=overlap)
            scaler_loop(m, new, 4, (), g)
            assert ctx.stats()["nomem"] == 0, ctx.stats()["nomem"]
            assert all(isinstance(s, umtorch.ParamState)
                       for s in new.state.values())
            assert len(new.state) == len(list(m.parameters()))
            nothing_acquired(ctx)
            del old
            gc.collect()
            assert ctx.stats()["regions"] == len(off.regions)
            del new, off
            gc.collect()
            assert ctx.close() == 0
        assert same_params(m, ref)
    both(run)
