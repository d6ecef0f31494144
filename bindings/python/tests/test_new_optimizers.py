# SPDX-License-Identifier: MIT
"""What torch 2.x added: Adafactor and Muon (bucketed, per parameter),
the fused CPU variants of Adam, AdamW, SGD and Adagrad, and a tensor lr,
offloaded bit-equal to plain with overlap on and off and a region per
parameter. Skipped where the installed torch lacks them."""

import gc

import torch

import umtorch
from common import Skip, context

O = torch.optim
MODES = ({}, {"min_bytes": 0}, {"overlap": False})


def _net():
    torch.manual_seed(1)
    return torch.nn.Sequential(
        torch.nn.Linear(64, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
        torch.nn.ReLU(), torch.nn.Linear(512, 10))


def _run(make, offload):
    m = _net()
    opt = make(m)
    with context() as ctx:
        off = umtorch.offload_optimizer(opt, ctx, **offload) \
            if offload is not None else None
        gen = torch.Generator().manual_seed(2)
        for _ in range(3):
            x = torch.randn(64, 64, generator=gen)
            y = torch.randint(0, 10, (64,), generator=gen)
            opt.zero_grad()
            torch.nn.functional.cross_entropy(m(x), y).backward()
            opt.step()
        if off is not None:
            assert off.regions, "nothing was offloaded"
        out = [p.detach().clone() for p in m.parameters()]
        out += [v.clone() for _, s in sorted(opt.state_dict()["state"].items())
                for _, v in sorted(s.items()) if torch.is_tensor(v)]
        del opt, off
        gc.collect()
    return out


def _same_offloaded(make):
    want = _run(make, None)
    for mode in MODES:
        got = _run(make, mode)
        assert len(got) == len(want) and all(
            torch.equal(a, b) for a, b in zip(got, want)), mode


def _needs(name):
    if not hasattr(O, name):
        raise Skip("torch.optim has no %s here" % name)


def test_adafactor_offloaded_bucket_by_bucket():
    _needs("Adafactor")
    _same_offloaded(lambda m: O.Adafactor(m.parameters(), lr=1e-2))


def test_muon_offloaded_bucket_by_bucket():
    _needs("Muon")
    _same_offloaded(lambda m: O.Muon(
        [p for p in m.parameters() if p.dim() == 2], lr=1e-2))


def test_fused_cpu_variants_and_tensor_lr():
    try:
        O.Adam([torch.zeros(2, requires_grad=True)], fused=True)
    except (TypeError, RuntimeError) as e:
        raise Skip("no fused CPU optimizers here: %s" % e)
    for make in (lambda m: O.Adam(m.parameters(), lr=1e-3, fused=True),
                 lambda m: O.AdamW(m.parameters(), lr=1e-3, fused=True),
                 lambda m: O.SGD(m.parameters(), lr=1e-3, momentum=0.9,
                                 fused=True),
                 lambda m: O.Adagrad(m.parameters(), lr=1e-3, fused=True),
                 lambda m: O.Adam(m.parameters(), lr=torch.tensor(1e-3))):
        _same_offloaded(make)
