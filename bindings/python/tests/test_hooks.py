# SPDX-License-Identifier: MIT
"""torch 2.x's optimizer hooks on an offloaded optimizer: the global and
the optimizer's own step pre/post hooks once a step (not once a bucket),
the state_dict and load_state_dict pre/post hooks (with prepend) in
torch's order, seeing what they see without the offload."""

import torch

import umtorch
from common import Skip, context, model, train


def _need_hooks():
    if not hasattr(torch.optim.Optimizer, "register_step_pre_hook"):
        raise Skip("this torch has no optimizer hooks")


def _record(opt, calls, m):
    from torch.optim import optimizer as o
    handles = [
        o.register_optimizer_step_pre_hook(
            lambda op, a, k: calls.append(("global pre", len(a)))),
        o.register_optimizer_step_post_hook(
            lambda op, a, k: calls.append(("global post", len(a))))]
    opt.register_step_pre_hook(lambda op, a, k: calls.append(("pre", len(a))))
    opt.register_step_post_hook(lambda op, a, k: calls.append("post"))
    opt.register_state_dict_pre_hook(lambda op: calls.append("sd pre"))
    opt.register_state_dict_post_hook(
        lambda op, sd: calls.append(("sd post", sorted(sd["state"][0]))))
    opt.register_state_dict_pre_hook(lambda op: calls.append("sd pre first"),
                                     prepend=True)
    opt.register_load_state_dict_pre_hook(
        lambda op, sd: calls.append(("load pre", len(sd["state"]))))
    opt.register_load_state_dict_post_hook(
        lambda op: calls.append(("load post", sorted(op.state[m[0].weight]))))
    opt.register_load_state_dict_post_hook(
        lambda op: calls.append("load post first"), prepend=True)
    return handles


def _calls(offload):
    calls = []
    m = model()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    handles = _record(opt, calls, m)
    try:
        with context() as ctx:
            if offload:
                off = umtorch.offload_optimizer(opt, ctx)
                assert len(off._buckets()) > 1	# hooks once, not per bucket
            train(m, opt, 2)
            opt.step(lambda: None)		# a closure: the args hooks see
            opt.load_state_dict(opt.state_dict())
            train(m, opt, 1)
            del opt
    finally:
        for h in handles:
            h.remove()
    return calls, [p.detach().clone() for p in m.parameters()]


def test_hooks_run_once_a_step_in_torchs_order():
    _need_hooks()
    want, plain = _calls(False)
    got, params = _calls(True)
    assert got == want, (got, want)
    assert all(torch.equal(a, b) for a, b in zip(params, plain))
