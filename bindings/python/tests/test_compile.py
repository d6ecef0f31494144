# SPDX-License-Identifier: MIT
"""torch.compile (torch 2.x, CPU inductor) of a function that steps an
offloaded optimizer: the offloaded step runs eagerly inside it (umtorch's
step is not traceable: ctypes, threads, region memory bound per step),
and the bits are plain torch's eager ones; overlap on and off."""

import torch

import umtorch
from common import Skip, context, model, same_params, train


class Compiled:
    """What train() steps: opt, its step called from a compiled
    function."""

    def __init__(self, opt):
        self.zero_grad = opt.zero_grad
        self.step = torch.compile(lambda: opt.step())


def test_compiled_step_runs_eagerly_with_plain_bits():
    if not hasattr(torch, "compile"):
        raise Skip("torch %s has no torch.compile" % torch.__version__)
    ref = model()
    train(ref, torch.optim.AdamW(ref.parameters(), lr=1e-3), 3)
    for overlap in (True, False):
        torch._dynamo.reset()
        with context() as ctx:
            m = model()
            opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
            umtorch.offload_optimizer(opt, ctx, overlap=overlap)
            train(m, Compiled(opt), 3)
            assert umtorch.memory_stats(ctx)["migrations.bytes"] > 0
            del opt
        assert same_params(m, ref), overlap
