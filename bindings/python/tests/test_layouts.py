# SPDX-License-Identifier: MIT
"""Parameters laid out other than contiguously (channels_last) keep torch's
strides in their state within the budget rule; wrapper optimizers are
refused with the way to offload them."""

import collections
import gc

import torch

import umtorch
from common import context

MIB = 1 << 20


def _convnet():
    """Four 256x256 2x2 convolutions in channels_last: each weight 1 MiB,
    its Adam state 2 MiB."""
    torch.manual_seed(3)
    layers = []
    for _ in range(4):
        layers += [torch.nn.Conv2d(256, 256, 2, padding=1), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers).to(memory_format=torch.channels_last)


def _train(m, opt, steps):
    gen = torch.Generator().manual_seed(4)
    for _ in range(steps):
        x = torch.randn(2, 256, 3, 3, generator=gen).to(
            memory_format=torch.channels_last)
        opt.zero_grad()
        m(x).pow(2).mean().backward()
        opt.step()


def _state(opt):
    return [v for _, s in sorted(opt.state_dict()["state"].items())
            for _, v in sorted(s.items()) if torch.is_tensor(v)]


def _strides(state):
    return [v.stride() for _, v in sorted(state.items())
            if torch.is_tensor(v)]


def _same(a, b):
    return len(a) == len(b) and all(
        x.shape == y.shape and x.stride() == y.stride() and torch.equal(x, y)
        for x, y in zip(a, b))


def _channels_last_run(make_opt, budget, overlap):
    plain = _convnet()
    popt = make_opt(plain.parameters())
    _train(plain, popt, 3)
    with context(device_budget=budget) as ctx:
        m = _convnet()
        opt = make_opt(m.parameters())
        off = umtorch.offload_optimizer(opt, ctx, overlap=overlap)
        _train(m, opt, 3)
        assert _same(list(m.parameters()), list(plain.parameters()))
        got, want = _state(opt), _state(popt)
        assert _same(got, want), [(x.stride(), y.stride())
                                  for x, y in zip(got, want)][:4]
        assert off.peak_plain == 0, off.peak_plain
        assert off.peak_device <= budget, (off.peak_device, budget)
        state = opt.state[m[0].weight]	# copies, between steps
        want = popt.state[plain[0].weight]
        assert _strides(state) == _strides(want)
        del opt, off
        gc.collect()
        assert ctx.close() == 0


def test_channels_last_state_keeps_its_strides_within_the_budget_rule():
    # the largest state (2 MiB) plus one 2 MiB granule
    for overlap in (True, False):
        _channels_last_run(lambda p: torch.optim.Adam(p, lr=1e-3), 4 * MIB,
                           overlap)


def test_channels_last_momentum_clone_and_rprop_keep_strides():
    for make in (lambda p: torch.optim.SGD(p, lr=1e-3, momentum=0.9),
                 lambda p: torch.optim.Rprop(p, lr=1e-3),
                 lambda p: torch.optim.Adagrad(p, lr=1e-3)):
        _channels_last_run(make, 6 * MIB, True)


def test_region_tensor_refuses_an_overlapping_stride():
    with context() as ctx:
        region = ctx.alloc(1 << 16)
        from umtorch import views
        for stride in ((1, 1), (4,), (1, 8)):
            try:
                views.make(region, torch.float32, (4, 4), 0, stride)
            except umtorch.UmError as e:
                assert "stride" in str(e), e
                continue
            raise AssertionError("stride %r accepted" % (stride,))
        t = views.make(region, torch.float32, (4, 8), 0, (1, 4))
        assert t.stride() == (1, 4) and not t.is_contiguous()
        views.empty(t)
        region.free()


class _Lookahead(torch.optim.Optimizer):
    """A wrapper in the manner of timm's Lookahead: it holds a base
    optimizer, shares its param_groups and every k steps pulls the
    weights back toward slow copies it keeps in the base's state."""

    def __init__(self, base, alpha=0.5, k=2):
        self.base, self.alpha, self.k = base, alpha, k
        # what torch 2.x's step wrapper reads (timm's sets them too)
        self._optimizer_step_pre_hooks = collections.OrderedDict()
        self._optimizer_step_post_hooks = collections.OrderedDict()
        self.param_groups = base.param_groups
        self.defaults = base.defaults
        self.state = base.state
        self.count = 0

    def step(self, closure=None):
        loss = self.base.step(closure)
        self.count += 1
        if self.count % self.k == 0:
            with torch.no_grad():
                for g in self.param_groups:
                    for p in g["params"]:
                        st = self.base.state[p]
                        if "slow" not in st:
                            st["slow"] = p.detach().clone()
                        st["slow"].add_(p - st["slow"], alpha=self.alpha)
                        p.copy_(st["slow"])
        return loss


def test_wrapper_optimizer_is_refused_naming_its_base():
    with context() as ctx:
        m = torch.nn.Linear(8, 8)
        opt = _Lookahead(torch.optim.Adam(m.parameters(), lr=1e-3))
        for per_parameter in (None, True):
            try:
                umtorch.offload_optimizer(opt, ctx,
                                          per_parameter=per_parameter)
            except umtorch.UmError as e:
                assert "offload_optimizer(optimizer.base, ctx)" in str(e), e
                assert "_Lookahead wraps" in str(e), e
                continue
            raise AssertionError("a wrapper optimizer was offloaded")
        assert opt.step.__func__ is _Lookahead.step	# left as it was


def test_wrapper_base_offloaded_steps_once_per_step():
    def run(offload):
        torch.manual_seed(5)
        m = torch.nn.Sequential(torch.nn.Linear(64, 512),
                                torch.nn.Linear(512, 512))
        base = torch.optim.Adam(m.parameters(), lr=1e-3)
        opt = _Lookahead(base)
        ctx = None
        if offload:
            ctx = context()
            umtorch.offload_optimizer(base, ctx, min_bytes=0)
        steps = []
        base.register_step_post_hook(lambda *a: steps.append(1)) \
            if hasattr(base, "register_step_post_hook") else None
        gen = torch.Generator().manual_seed(6)
        for _ in range(4):
            opt.zero_grad()
            m(torch.randn(4, 64, generator=gen)).pow(2).mean().backward()
            opt.step()
        out = [p.detach().clone() for p in m.parameters()]
        if ctx is not None:
            assert getattr(base.step, "_umtorch_offload", False)
            del opt, base
            gc.collect()
            assert ctx.close() == 0
        return out, len(steps)
    plain, plain_steps = run(False)
    got, got_steps = run(True)
    assert _same(got, plain)
    assert got_steps == plain_steps
