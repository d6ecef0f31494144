# SPDX-License-Identifier: MIT
"""State can always be read out: a region larger than a budget lowered
after it was made still gives state_dict(), detach() and close() (and
exit says nothing); a device budget of 0 or of 2^64 and more is refused
instead of meaning the whole device."""

import errno
import os
import subprocess
import sys

import torch

import umtorch
from common import raises
from test_inplace import run, wide_model

HERE = os.path.dirname(os.path.abspath(__file__))


def test_region_larger_than_lowered_budget_reads_out():
    for overlap in (True, False):
        ref = wide_model()
        ropt = torch.optim.Adam(ref.parameters(), lr=1e-3)
        run(ref, ropt, 2)
        with umtorch.Context(backend="sim", device_budget="10M",
                             sim_capacity="64M") as ctx:
            m = wide_model()
            opt = torch.optim.Adam(m.parameters(), lr=1e-3)
            off = umtorch.offload_optimizer(opt, ctx, overlap=overlap)
            run(m, opt, 2)
            ctx.set_budget("4M")	# below the 8 MiB region of 2.weight
            sd = opt.state_dict()
            want = ropt.state_dict()
            for i in want["state"]:
                for k, v in want["state"][i].items():
                    assert torch.equal(v, sd["state"][i][k]), (i, k)
            assert ctx.budget() == 4 << 20
            assert torch.equal(opt.state[m[2].weight]["exp_avg"],
                               ropt.state[ref[2].weight]["exp_avg"])
            off.detach()
            assert not isinstance(opt.state[m[2].weight],
                                  umtorch.ParamState)
            assert ctx.budget() == 4 << 20
            assert ctx.close() == 0


def test_close_and_exit_with_a_region_over_the_budget():
    code = """
import sys
sys.path[:0] = [%r, %r]
import torch, umtorch
from test_inplace import run, wide_model
ctx = umtorch.Context(backend="sim", device_budget="10M", sim_capacity="64M")
m = wide_model()
opt = torch.optim.Adam(m.parameters(), lr=1e-3)
umtorch.offload_optimizer(opt, ctx)
run(m, opt, 1)
ctx.set_budget("4M")
keep = (ctx, opt)	# closed at exit
""" % (HERE, os.path.dirname(HERE))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert not p.stderr.strip(), p.stderr


def test_device_budget_zero_or_past_64_bits_refused():
    for bad in (0, "0", "0M", 1 << 64, "16777216T", (1 << 64) + 5):
        e = raises(-errno.EINVAL, umtorch.Context, backend="sim",
                   device_budget=bad, kind=ValueError)
        assert "device_budget" in str(e), str(e)
    for field in ("sim_capacity", "pool_size", "chunk_bytes"):
        raises(-errno.EINVAL, umtorch.Context, backend="sim",
               kind=ValueError, **{field: 1 << 64})
    with umtorch.Context(backend="sim", device_budget="8M",
                         sim_capacity="64M") as ctx:
        raises(-errno.EINVAL, ctx.set_budget, 1 << 64, kind=ValueError)
        raises(-errno.EINVAL, ctx.alloc, 1 << 64, kind=ValueError)
        ctx.set_budget(0)	# "nothing may stay", as um_budget_set(3)
        assert ctx.budget() == 0
        assert umtorch.Context(backend="sim", device_budget=1,
                               sim_capacity="64M").budget() == 1
