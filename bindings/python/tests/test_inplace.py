# SPDX-License-Identifier: MIT
"""New state is made in its regions: a budget of the largest parameter's
state plus a granule is enough for every optimizer, with no plain copy on
the way, bits as plain torch's; state an init makes some other way is
moved in after; a bucket that cannot fit names its parameter."""

import errno

import torch

import umtorch
from common import raises

MIB = 1 << 20
GRANULE = 2 * MIB


def wide_model():
    """One 1024x1024 weight (4 MiB) and small ones."""
    torch.manual_seed(3)
    return torch.nn.Sequential(torch.nn.Linear(64, 1024), torch.nn.ReLU(),
                               torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                               torch.nn.Linear(1024, 10))


def run(m, opt, steps, seed=1):
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x = torch.randn(16, 64, generator=g)
        y = torch.randint(0, 10, (16,), generator=g)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(m(x), y).backward()
        opt.step()


CASES = [(torch.optim.Adam, dict(lr=1e-3), 2),
         (torch.optim.AdamW, dict(lr=1e-3, amsgrad=True), 3),
         (torch.optim.SGD, dict(lr=1e-2, momentum=0.9, weight_decay=0.1), 1),
         (torch.optim.Adagrad, dict(lr=1e-2), 1),
         (torch.optim.RMSprop, dict(lr=1e-3, centered=True, momentum=0.5),
          3),
         (torch.optim.Rprop, dict(lr=1e-3), 2),
         (torch.optim.NAdam, dict(lr=1e-3), 2)]


def test_budget_of_largest_state_plus_a_granule():
    for cls, kw, tensors in CASES:
        for overlap in (True, False) if cls is torch.optim.Adam else (True,):
            largest = tensors * 4 * MIB
            budget = largest + GRANULE
            ref = wide_model()
            run(ref, cls(ref.parameters(), **kw), 2)
            with umtorch.Context(backend="sim", device_budget=budget,
                                 sim_capacity="64M") as ctx:
                m = wide_model()
                opt = cls(m.parameters(), **kw)
                off = umtorch.offload_optimizer(opt, ctx, model=m,
                                                overlap=overlap)
                umtorch.reset_peak_memory_stats(ctx)
                run(m, opt, 2)
                peak = umtorch.memory_stats(ctx)["tier.device.peak"]
                assert off.peak_plain == 0, (cls, off.peak_plain)
                assert 0 < peak <= budget, (cls, peak, budget)
                assert all(isinstance(s, umtorch.ParamState)
                           for s in opt.state.values()), cls
                assert ctx.stats()["nomem"] == 0, cls
            for a, b in zip(ref.parameters(), m.parameters()):
                assert torch.equal(a, b), (cls, overlap)
            print("# %s: budget %d (largest state %d + a granule), device "
                  "peak %d" % (cls.__name__, budget, largest, peak))


class ZerosOptimizer(torch.optim.Optimizer):
    """Makes its state with torch.zeros(shape): not from the parameter,
    so it is made plain and moved into a region after the step."""

    def __init__(self, params, lr=0.1):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self, closure=None):
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["avg"] = torch.zeros(p.shape)
                st["avg"].mul_(0.9).add_(p.grad)
                p.add_(st["avg"], alpha=-g["lr"])


def test_state_made_otherwise_is_moved_in():
    ref = wide_model()
    run(ref, ZerosOptimizer(ref.parameters()), 3)
    with umtorch.Context(backend="sim", device_budget="16M",
                         sim_capacity="64M") as ctx:
        m = wide_model()
        opt = ZerosOptimizer(m.parameters())
        off = umtorch.offload_optimizer(opt, ctx, per_parameter=True)
        run(m, opt, 3)
        assert off.peak_plain > 0
        assert all(isinstance(s, umtorch.ParamState)
                   for s in opt.state.values())
    for a, b in zip(ref.parameters(), m.parameters()):
        assert torch.equal(a, b)


def test_bucket_that_cannot_fit_names_the_parameter():
    with umtorch.Context(backend="sim", device_budget="10M",
                         sim_capacity="64M") as ctx:
        m = wide_model()
        opt = torch.optim.Adam(m.parameters(), lr=1e-3)
        umtorch.offload_optimizer(opt, ctx, model=m)
        run(m, opt, 1)
        big = torch.nn.Parameter(torch.zeros(2048, 1024))	# 16 MiB state
        opt.add_param_group({"params": [big]})
        big.grad = torch.ones_like(big)
        e = raises(-errno.ENOMEM, opt.step)
        assert "p6" in str(e) and "budget" in str(e), str(e)
        e = raises(-errno.ENOMEM, umtorch.offload_optimizer,
                   torch.optim.Adam([big]), ctx)
        assert "p0" in str(e) and "device budget" in str(e), str(e)
