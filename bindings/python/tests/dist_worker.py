# SPDX-License-Identifier: MIT
"""One rank of test_dist.py: DDP + ZeroRedundancyOptimizer (and DDP +
plain AdamW), trained plainly and then offloaded (each rank its own libum
context); prints one line per mode with the runs' parameter checksums.
Usage: dist_worker.py RANK WORLD INIT_FILE"""

import hashlib
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]
import umtorch  # noqa: E402
from common import context, model  # noqa: E402

STEPS = 4


def digest(m):
    h = hashlib.sha256()
    for p in m.parameters():
        h.update(p.detach().numpy().tobytes())
    return h.hexdigest()[:16]


def run(rank, zero, offload):
    m = DDP(model())
    if zero:
        opt = ZeroRedundancyOptimizer(m.parameters(),
                                      optimizer_class=torch.optim.AdamW,
                                      lr=1e-3)
    else:
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(10 + rank)	# each rank its data
    with context() as ctx:
        off = umtorch.offload_optimizer(opt, ctx) if offload else None
        for _ in range(STEPS):
            x = torch.randn(32, 64, generator=gen)
            y = torch.randint(0, 10, (32,), generator=gen)
            opt.zero_grad()
            torch.nn.functional.cross_entropy(m(x), y).backward()
            opt.step()
        if off is not None:
            # evicted where it exceeds the budget (a ZeRO shard may not)
            assert off.nbytes > 0
            assert off.nbytes <= ctx.budget() or \
                ctx.stats()["migrations"]["evict_count"]
            if zero:	# only this rank's shard is offloaded
                assert off.optimizer is opt.optim
            off.detach()
            assert ctx.close() == 0
    return digest(m.module)


def main():
    rank, world, init = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    dist.init_process_group("gloo", init_method="file://" + init,
                            rank=rank, world_size=world)
    for zero in (False, True):
        plain, offloaded = run(rank, zero, False), run(rank, zero, True)
        print("rank %d %s plain %s offloaded %s" % (
            rank, "zero" if zero else "ddp", plain, offloaded), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
