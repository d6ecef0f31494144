# SPDX-License-Identifier: MIT
"""torch.compile over code that steps an offloaded optimizer: the step
itself runs eagerly (a graph break at it), so it gives the bits of the
plain eager step, with overlap on and off. torch 2.x only."""

import torch

import umtorch
from common import Skip, context, model


def _run(offload, overlap=True):
    m = model()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    with context() as ctx:
        if offload:
            umtorch.offload_optimizer(opt, ctx, overlap=overlap)

        def step():
            opt.step()
        if offload:
            step = torch.compile(step, backend="inductor")
        gen = torch.Generator().manual_seed(2)
        for _ in range(3):
            x = torch.randn(64, 64, generator=gen)
            y = torch.randint(0, 10, (64,), generator=gen)
            opt.zero_grad()
            torch.nn.functional.cross_entropy(m(x), y).backward()
            step()
        out = [p.detach().clone() for p in m.parameters()]
        del opt
    return out


def test_compiled_step_runs_eagerly_and_matches_plain():
    if not hasattr(torch, "compile"):
        raise Skip("no torch.compile in this torch")
    torch.compiler.reset()
    plain = _run(False)
    for overlap in (True, False):
        got = _run(True, overlap)
        assert all(torch.equal(a, b) for a, b in zip(got, plain)), overlap
