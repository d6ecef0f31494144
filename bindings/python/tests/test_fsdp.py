# SPDX-License-Identifier: MIT
"""FSDP2 (fully_shard, DTensor parameters) over gloo with 2 ranks: the
optimizer offloaded on each rank under a budget below its shard's state
gives the bits of the plain run; its state saved with
torch.distributed.checkpoint mid-way resumes into plain and offloaded
runs, bit-equal too. torch 2.x only."""

import os

from common import Skip, run_ranks

HERE = os.path.dirname(os.path.abspath(__file__))
WORLD = 2


def test_fsdp2_and_distributed_checkpoint_bit_equal():
    try:
        from torch.distributed.fsdp import fully_shard  # noqa: F401
        import torch.distributed.checkpoint.state_dict  # noqa: F401
    except (ImportError, ValueError) as e:	# 1.13's fails on Python 3.11
        raise Skip("no FSDP2 and checkpoint API in this torch: %s" % e)
    lines = run_ranks(os.path.join(HERE, "fsdp_worker.py"), WORLD,
                      os.path.join("{tmp}", "checkpoint"), timeout=200)
    runs = {}
    for line in lines:
        _, rank, name, _, params, _, state = line.split()
        runs.setdefault(rank, {})[name] = (params, state)
    assert sorted(runs) == ["0", "1"], runs
    for rank, by_run in runs.items():
        assert sorted(by_run) == ["offloaded-resumed", "offloaded-saving",
                                  "plain", "plain-resumed"], by_run
        assert len(set(by_run.values())) == 1, (rank, by_run)
    assert runs["0"]["plain"] != runs["1"]["plain"]	# each its shard
