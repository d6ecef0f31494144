# SPDX-License-Identifier: MIT
"""Regions die with their optimizer; opt.state, repr, deepcopy, pickling
and reading state between steps work; close() and exit say nothing."""

import copy
import gc
import io
import logging
import os
import subprocess
import sys

import torch

import umtorch
from common import context, model, same_params, train

HERE = os.path.dirname(os.path.abspath(__file__))


class Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        if record.levelno >= logging.WARNING:
            self.lines.append(record.getMessage())


def test_regions_freed_when_optimizer_collected():
    logs = Records()
    logging.getLogger("umtorch").addHandler(logs)
    with context() as ctx:
        m = model()
        for _ in range(3):
            opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
            sched = torch.optim.lr_scheduler.StepLR(opt, 10)
            off = umtorch.offload_optimizer(opt, ctx)
            train(m, opt, 2)
            sched.step()
            assert ctx.stats()["regions"] == len(off.regions) > 0
            del opt, sched, off
            gc.collect()
            assert ctx.stats()["regions"] == 0, ctx.stats()["regions"]
        assert ctx.close() == 0
    assert not logs.lines, logs.lines


def test_state_reads_between_steps_are_copies():
    plain = model()
    popt = torch.optim.Adam(plain.parameters(), lr=1e-3)
    train(plain, popt, 3)
    with context() as ctx:
        m = model()
        opt = torch.optim.Adam(m.parameters(), lr=1e-3)
        umtorch.offload_optimizer(opt, ctx)
        train(m, opt, 3)
        w = m[2].weight
        state = opt.state[w]
        assert isinstance(state, umtorch.ParamState)
        got = state["exp_avg"]
        assert torch.equal(got, popt.state[plain[2].weight]["exp_avg"])
        (got * 0).add_(1)	# a result computed from the copy is plain
        got.clone().zero_()
        assert torch.equal(opt.state[w]["exp_avg"],
                           popt.state[plain[2].weight]["exp_avg"])
        assert "exp_avg_sq" in repr(opt.state) and len(state) == 3
        assert sorted(state) == ["exp_avg", "exp_avg_sq", "step"]
        # a write between steps goes into the region
        opt.state[w]["exp_avg"] = torch.ones_like(w)
        assert opt.state[w]["exp_avg"].sum().item() == w.numel()
        items = dict(opt.state[w].items())
        assert items["exp_avg_sq"].shape == w.shape


def test_deepcopy_and_pickle_give_plain_optimizers():
    with context() as ctx:
        m = model()
        opt = torch.optim.Adam(m.parameters(), lr=1e-3)
        umtorch.offload_optimizer(opt, ctx)
        train(m, opt, 2)
        m2, opt2 = copy.deepcopy((m, opt))
        assert "step" not in opt2.__dict__
        assert not any(isinstance(s, umtorch.ParamState)
                       for s in opt2.state.values())
        assert all(p in opt2.state for p in m2.parameters())
        buf = io.BytesIO()
        torch.save({"model": m, "opt": opt}, buf)
        buf.seek(0)
        # whole objects, not weights: torch 2.6 on refuses them by default
        loaded = torch.load(buf, weights_only=False)
        m3, opt3 = loaded["model"], loaded["opt"]
        assert "step" not in opt3.__dict__
        train(m, opt, 2, seed=4)		# offloaded, under the budget
    train(m2, opt2, 2, seed=4)			# plain copies go on alike
    train(m3, opt3, 2, seed=4)
    assert same_params(m, m2) and same_params(m, m3)


def test_exit_without_close_is_quiet():
    """The user forgets close(): exit frees everything and prints
    nothing; a crash or a warning would show in stderr."""
    code = ("import sys; sys.path[:0] = %r\n"
            "import torch, umtorch, common\n"
            "ctx = common.context()\n"
            "m = common.model()\n"
            "opt = torch.optim.Adam(m.parameters())\n"
            "umtorch.offload_optimizer(opt, ctx)\n"
            "common.train(m, opt, 2)\n"
            "r = ctx.alloc(4096)\n"
            "print(opt.state[m[0].weight]['exp_avg'].shape)\n"
            % ([os.path.dirname(HERE), HERE],))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "", proc.stderr
    assert "512, 64" in proc.stdout


def test_offload_collected_with_optimizer_alive_keeps_state():
    """The optimizer references its offload: dropping the offload object
    alone changes nothing."""
    with context() as ctx:
        m = model()
        opt = torch.optim.Adam(m.parameters(), lr=1e-3)
        umtorch.offload_optimizer(opt, ctx)
        train(m, opt, 1)
        gc.collect()
        n = ctx.stats()["regions"]
        assert n > 0
        train(m, opt, 1)
        assert ctx.stats()["regions"] == n
