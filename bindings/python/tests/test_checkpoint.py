# SPDX-License-Identifier: MIT
"""Checkpoints as PyTorch users handle them: load_state_dict copies what
it is given (training leaves the caller's dict alone; one dict loaded
twice gives one run twice) and runs the optimizer's own conversion (a
checkpoint whose 'step' is a number); overlap on and off."""

import copy

import torch

import umtorch
from common import context, model, same_params, train


def flat(sd):
    out = []
    for i in sorted(sd["state"]):
        for k in sorted(sd["state"][i]):
            v = sd["state"][i][k]
            out.append(v.clone() if torch.is_tensor(v) else v)
    return out


def same_flat(a, b):
    return len(a) == len(b) and all(
        torch.equal(x, y) if torch.is_tensor(x) else x == y
        for x, y in zip(a, b))


def test_checkpoint_loaded_twice_gives_one_run():
    for overlap in (True, False):
        src = model()
        sopt = torch.optim.Adam(src.parameters(), lr=1e-3)
        train(src, sopt, 2)
        ckpt = sopt.state_dict()
        before = flat(ckpt)
        runs = []
        with context() as ctx:
            for _ in range(2):
                m = model()
                m.load_state_dict(src.state_dict())
                opt = torch.optim.Adam(m.parameters(), lr=1e-3)
                umtorch.offload_optimizer(opt, ctx, overlap=overlap)
                opt.load_state_dict(ckpt)
                train(m, opt, 3, seed=9)
                runs.append(m)
                # the caller's checkpoint is its own: training left it
                assert same_flat(flat(ckpt), before), "checkpoint changed"
        assert same_params(runs[0], runs[1])
        train(src, sopt, 3, seed=9)
        assert same_params(src, runs[0])


def test_checkpoint_with_numeric_steps():
    """torch before 1.12 saved Adam's 'step' as a number; Adam's own
    __setstate__ makes it a tensor when such a dict is loaded."""
    for overlap in (True, False):
        src = model()
        sopt = torch.optim.Adam(src.parameters(), lr=1e-3)
        train(src, sopt, 2)
        old = copy.deepcopy(sopt.state_dict())
        for s in old["state"].values():
            s["step"] = float(s["step"])
        ref = model()
        ref.load_state_dict(src.state_dict())
        ropt = torch.optim.Adam(ref.parameters(), lr=1e-3)
        # torch 2.x's load_state_dict keeps the dict's tensors (1.13
        # copied them): training ropt would change old before m loads it
        ropt.load_state_dict(copy.deepcopy(old))
        train(ref, ropt, 2, seed=4)
        with context() as ctx:
            m = model()
            m.load_state_dict(src.state_dict())
            opt = torch.optim.Adam(m.parameters(), lr=1e-3)
            umtorch.offload_optimizer(opt, ctx, overlap=overlap)
            opt.load_state_dict(old)
            assert all(torch.is_tensor(s["step"]) for s in opt.state.values())
            train(m, opt, 2, seed=4)
        assert same_params(m, ref)
