# SPDX-License-Identifier: MIT
"""One rank of test_fsdp.py: a model sharded with FSDP2's fully_shard,
AdamW plain and offloaded (each rank its own libum context, under a
budget below its shard's state), and the optimizer's state through
torch.distributed.checkpoint: saved from the offloaded run mid-way,
resumed into a plain and into an offloaded run. Prints one line per run
with the parameters' checksum and the step-end state's.
Usage: fsdp_worker.py RANK WORLD INIT_FILE CHECKPOINT_DIR"""

import hashlib
import os
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import (
    get_model_state_dict, get_optimizer_state_dict, set_model_state_dict,
    set_optimizer_state_dict)
from torch.distributed.fsdp import fully_shard

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]
import umtorch  # noqa: E402
from umtorch.state import ParamState  # noqa: E402
from common import context, model  # noqa: E402

STEPS, SAVED_AT = 6, 3
BUDGET = "2M"	# a rank's AdamW state is 3.2 MiB, its largest 1 MiB


def sharded():
    m = model()
    for layer in m:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer)
    return fully_shard(m)


def digest(tensors):
    h = hashlib.sha256()
    for t in tensors:
        t = t.to_local() if hasattr(t, "to_local") else t
        h.update(t.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def state_digest(opt):
    sd = opt.state_dict()["state"]
    return digest([v for _, s in sorted(sd.items())
                   for _, v in sorted(s.items()) if torch.is_tensor(v)])


def train(m, opt, rank, first, last):
    for step in range(first, last):
        gen = torch.Generator().manual_seed(100 * rank + step)
        x = torch.randn(32, 64, generator=gen)
        y = torch.randint(0, 10, (32,), generator=gen)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(m(x), y).backward()
        opt.step()


def offloaded(m, opt, ctx):
    off = umtorch.offload_optimizer(opt, ctx, model=m)
    return off


def check_offloaded(opt, off, ctx):
    assert off.regions and all(isinstance(s, ParamState)
                               for s in opt.state.values())
    assert off.nbytes > ctx.budget(), (off.nbytes, ctx.budget())
    assert ctx.raw_stats().device[0].peak <= ctx.budget()


def run(rank, offload, save_to=None, resume_from=None):
    m = sharded()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    with context(device_budget=BUDGET) as ctx:
        off = offloaded(m, opt, ctx) if offload else None
        first = 0
        if resume_from:
            state = {"model": get_model_state_dict(m),
                     "optim": get_optimizer_state_dict(m, opt)}
            dcp.load(state, checkpoint_id=resume_from)
            set_model_state_dict(m, state["model"])
            set_optimizer_state_dict(m, opt, state["optim"])
            first = SAVED_AT
        train(m, opt, rank, first, SAVED_AT if save_to else STEPS)
        if save_to:
            dcp.save({"model": get_model_state_dict(m),
                      "optim": get_optimizer_state_dict(m, opt)},
                     checkpoint_id=save_to)
            train(m, opt, rank, SAVED_AT, STEPS)
        if off is not None:
            check_offloaded(opt, off, ctx)
        out = digest(m.parameters()), state_digest(opt)
        if off is not None:
            off.detach()
            assert ctx.close() == 0
    return out


def main():
    rank, world, init, ckpt = sys.argv[1], sys.argv[2], sys.argv[3], \
        sys.argv[4]
    rank, world = int(rank), int(world)
    dist.init_process_group("gloo", init_method="file://" + init,
                            rank=rank, world_size=world)
    runs = [("plain", run(rank, False)),
            ("offloaded-saving", run(rank, True, save_to=ckpt)),
            ("plain-resumed", run(rank, False, resume_from=ckpt)),
            ("offloaded-resumed", run(rank, True, resume_from=ckpt))]
    for name, (params, state) in runs:
        print("rank %d %s params %s state %s" % (rank, name, params, state),
              flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
