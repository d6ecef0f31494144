# SPDX-License-Identifier: MIT
"""A step that raises, or is interrupted, leaves the optimizer as plain
torch leaves it, and no region acquired; with overlap on and off."""

import gc
import signal
import sys

import torch

import umtorch
from common import context, model, train
from umtorch.optim import _ahead_pool

OVERLAPS = (True, False)


def _batch(seed):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(64, 64, generator=gen), \
        torch.randint(0, 10, (64,), generator=gen)


def _backward(m, seed):
    x, y = _batch(seed)
    for p in m.parameters():
        p.grad = None
    torch.nn.functional.cross_entropy(m(x), y).backward()


def _equal(a, b):
    return len(a) == len(b) and all(
        x.shape == y.shape and x.stride() == y.stride() and torch.equal(x, y)
        for x, y in zip(a, b))


def _no_region_held(ctx):
    _ahead_pool().submit(lambda: None).result()
    held = [r.name for r in list(ctx._regions.values())
            if not r.freed and r.info()["acquired"]]
    assert not held, "regions left acquired: %s" % held


def _step_raising(opt):
    try:
        opt.step()
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e)
    return None


def _plain_run(make, steps):
    m, opt = make()
    want = []
    for i in range(steps):
        _backward(m, i)
        want.append((_step_raising(opt), _state_by_param(opt),
                     [p.detach().clone() for p in m.parameters()]))
    assert any(w[0] for w in want), "plain torch raised nothing"
    return want


def _state_by_param(opt):
    """{parameter index: [its state tensors, plain copies]}"""
    return {i: [v.detach().clone() for _, v in sorted(s.items())
                if torch.is_tensor(v)]
            for i, s in opt.state_dict()["state"].items()}


def _same_failure(make, steps=3, **offload):
    """make() -> (model, optimizer) whose steps may raise. Offloaded with
    the whole state in one bucket (a 64 MiB budget), each step raises
    what plain torch's raises and leaves the same state and parameters.
    In buckets (the 4 MiB budget), a bucket that raises stops the step:
    each step raises the same, and each parameter's state is plain
    torch's or not made yet (the next step makes it zeroed, as torch's
    init does); never an emptied tensor."""
    want = _plain_run(make, steps)
    for budget, overlap in (("64M", True), ("64M", False), ("4M", True),
                            ("4M", False)):
        with context(device_budget=budget) as ctx:
            m, opt = make()
            umtorch.offload_optimizer(opt, ctx, overlap=overlap, **offload)
            for i, (err, state, params) in enumerate(want):
                _backward(m, i)
                got = _step_raising(opt)
                why = (budget, overlap, i)
                assert got == err, (why, got, err)
                have = _state_by_param(opt)
                assert all(v.numel() for t in have.values() for v in t), why
                assert all(_equal(t, state[k]) for k, t in have.items()), why
                if budget == "64M":
                    assert have.keys() == state.keys(), why
                    assert _equal(list(m.parameters()), params), why
                _no_region_held(ctx)
            del opt
            gc.collect()
            assert ctx.close() == 0


def test_capturable_on_cpu_keeps_zeroed_state():
    def make():
        m = model()
        return m, torch.optim.Adam(m.parameters(), lr=1e-3, capturable=True)
    _same_failure(make)


def test_differentiable_error_keeps_state():
    def make():
        m = model()
        return m, torch.optim.Adam(m.parameters(), lr=1e-3,
                                   differentiable=True)
    try:
        make()
    except TypeError:
        from common import Skip
        raise Skip("this torch's Adam has no differentiable")
    _same_failure(make)


class _FailsOnce(torch.optim.AdamW):
    """Raises after its first step made and updated the state: a
    gradient scaler or logging hook failing, say."""

    def step(self, closure=None):
        out = super().step(closure)
        if not getattr(self, "failed", False):
            self.failed = True
            raise RuntimeError("failed once")
        return out


def test_exception_in_first_step_then_training_goes_on():
    def make():
        m = model()
        return m, _FailsOnce(m.parameters(), lr=1e-3)
    want = _plain_run(make, 4)
    for overlap in OVERLAPS:
        with context(device_budget="64M") as ctx:
            m, opt = make()
            umtorch.offload_optimizer(opt, ctx, overlap=overlap)
            for i, (err, state, params) in enumerate(want):
                _backward(m, i)
                assert _step_raising(opt) == err, (overlap, i)
                have = _state_by_param(opt)
                assert have.keys() == state.keys()
                assert all(_equal(t, state[k]) for k, t in have.items())
                assert _equal(list(m.parameters()), params), (overlap, i)
                _no_region_held(ctx)
            del opt
            gc.collect()
            assert ctx.close() == 0


def test_state_made_plain_by_a_failed_step_moves_into_regions():
    with context() as ctx:
        m = model()
        opt = _FailsOnce(m.parameters(), lr=1e-3)
        off = umtorch.offload_optimizer(opt, ctx, per_parameter=True)
        _backward(m, 0)
        assert _step_raising(opt) == "RuntimeError: failed once"
        assert not off.regions
        train(m, opt, 1)
        assert len(off.regions) > 0
        assert all(isinstance(s, umtorch.state.ParamState)
                   for s in opt.state.values())


# ---- Ctrl-C at any instant of a step --------------------------------------

def _lines_of_step(m, opt):
    """How many line events umtorch's code has in one step."""
    count = [0]

    def trace(frame, event, arg):
        if "umtorch" in frame.f_code.co_filename:
            if event == "line":
                count[0] += 1
            return trace
        return None
    sys.settrace(trace)
    try:
        opt.step()
    finally:
        sys.settrace(None)
    return count[0]


def _interrupt_at(m, opt, n):
    """Step with a real SIGINT raised at umtorch's n-th line event."""
    count = [0]

    def trace(frame, event, arg):
        if "umtorch" in frame.f_code.co_filename:
            if event == "line":
                count[0] += 1
                if count[0] == n:
                    signal.raise_signal(signal.SIGINT)
            return trace
        return None
    sys.settrace(trace)
    try:
        opt.step()
    except KeyboardInterrupt:
        return True
    finally:
        sys.settrace(None)
    return False


def _offloaded(ctx, overlap, steps_before):
    m = model()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    umtorch.offload_optimizer(opt, ctx, overlap=overlap, bucket_bytes="2M")
    train(m, opt, steps_before)
    return m, opt


def _interrupted_everywhere(first, overlap, points):
    """A SIGINT at points instants spread over a step (a first step, with
    a new optimizer each time, or a later one): the step raises
    KeyboardInterrupt or finishes, and leaves no region acquired."""
    with context() as ctx:
        m, opt = _offloaded(ctx, overlap, 0 if first else 2)
        _backward(m, 1)
        lines = _lines_of_step(m, opt)
        interrupted = 0
        for n in range(1, lines + 1, max(1, lines // points)):
            if first:
                m, opt = _offloaded(ctx, overlap, 0)
            _backward(m, n)
            interrupted += _interrupt_at(m, opt, n)
            _no_region_held(ctx)
        assert interrupted > 0
        train(m, opt, 1)		# and it goes on
        _no_region_held(ctx)
        del m, opt
        gc.collect()
        assert ctx.close() == 0


def test_ctrl_c_at_any_instant_of_a_first_step_leaves_nothing_acquired():
    for overlap in OVERLAPS:
        _interrupted_everywhere(True, overlap, 30)


def test_ctrl_c_at_any_instant_of_a_step_leaves_nothing_acquired():
    for overlap in OVERLAPS:
        _interrupted_everywhere(False, overlap, 50)


def test_ctrl_c_reaches_a_handler_of_the_users():
    seen = []
    before = signal.signal(signal.SIGINT, lambda s, f: seen.append(s))
    try:
        with context() as ctx:
            m = model()
            opt = torch.optim.Adam(m.parameters(), lr=1e-3)
            umtorch.offload_optimizer(opt, ctx, bucket_bytes="2M")
            train(m, opt, 1)
            _backward(m, 1)
            assert not _interrupt_at(m, opt, 40)
            assert seen == [signal.SIGINT], seen
            _no_region_held(ctx)
            del opt
            gc.collect()
    finally:
        signal.signal(signal.SIGINT, before)
