# SPDX-License-Identifier: MIT
"""Optimizers whose update is not per parameter: one that is not torch's
own (a global gradient norm, say) runs one step over all parameters,
or is refused with a message when its state cannot all fit; a subclass
that keeps torch's step is bucketed; a step that reads another bucket's
state says its update is not per parameter."""

import errno

import torch

import umtorch
from common import context, model, raises, same_params, train


class GlobalNormSGD(torch.optim.Optimizer):
    """Momentum SGD on gradients scaled by their norm over every
    parameter: bucket by bucket it would compute something else."""

    def __init__(self, params, lr=0.1):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self, closure=None):
        params = [p for g in self.param_groups for p in g["params"]
                  if p.grad is not None]
        norm = torch.sqrt(sum((p.grad ** 2).sum() for p in params))
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["buf"] = torch.zeros_like(p)
                st["buf"].mul_(0.9).add_(p.grad / norm)
                p.add_(st["buf"], alpha=-g["lr"])


class FirstStepCounter(torch.optim.Adam):
    """Reads the first parameter's state in every step (a global
    counter): not per parameter, though it claims to be."""

    def __init__(self, params, **kw):
        super().__init__(params, **kw)
        self.first = self.param_groups[0]["params"][0]

    def step(self, closure=None):
        if self.first in self.state:
            self.state[self.first]["exp_avg"].sum()
        return super().step(closure)


class MyAdam(torch.optim.Adam):
    pass


def test_global_norm_optimizer_runs_as_one_step():
    for overlap in (True, False):
        ref = model()
        train(ref, GlobalNormSGD(ref.parameters()), 3)
        # fits the budget whole, but bucket_bytes would split it
        with context(device_budget="12M") as ctx:
            m = model()
            opt = GlobalNormSGD(m.parameters())
            off = umtorch.offload_optimizer(opt, ctx, bucket_bytes="2M",
                                            overlap=overlap)
            assert not off.per_parameter
            train(m, opt, 3)
            assert all(isinstance(s, umtorch.ParamState)
                       for s in opt.state.values())
        assert same_params(m, ref), overlap


def test_not_per_parameter_over_the_budget_is_refused():
    with context(device_budget="2M") as ctx:
        m = model()
        opt = GlobalNormSGD(m.parameters())
        e = raises(-errno.ENOMEM, umtorch.offload_optimizer, opt, ctx)
        assert "GlobalNormSGD" in str(e) and "per_parameter" in str(e), e
        # told it is per parameter, it is bucketed (and here: wrong)
        off = umtorch.offload_optimizer(opt, ctx, per_parameter=True)
        assert off.per_parameter
        off.detach()
        raises(-errno.EINVAL, umtorch.offload_optimizer, opt, ctx,
               per_parameter="yes", kind=TypeError)


def test_subclass_keeping_torchs_step_is_bucketed():
    ref = model()
    train(ref, torch.optim.Adam(ref.parameters(), lr=1e-3), 3)
    with context() as ctx:
        m = model()
        opt = MyAdam(m.parameters(), lr=1e-3)
        off = umtorch.offload_optimizer(opt, ctx)
        assert off.per_parameter
        train(m, opt, 3)			# 6.6 MB of state, 4 MiB budget
    assert same_params(m, ref)


def test_step_reading_another_buckets_state_says_so():
    with context() as ctx:
        m = model()
        opt = FirstStepCounter(m.parameters(), lr=1e-3)
        off = umtorch.offload_optimizer(opt, ctx, per_parameter=True)
        try:
            train(m, opt, 2)
            raise AssertionError("read across buckets not noticed")
        except RuntimeError as e:
            assert "not per parameter" in str(e), e
        off.detach()
