# SPDX-License-Identifier: MIT
"""DDP and ZeroRedundancyOptimizer over gloo with 2 ranks: offloading
(each rank its own libum context; ZeRO: its local shard) gives the same
bits as the same run without offload, and the ranks agree."""

import os

from common import run_ranks

HERE = os.path.dirname(os.path.abspath(__file__))
WORLD = 2


def test_ddp_and_zero_two_ranks_bit_identical():
    lines = run_ranks(os.path.join(HERE, "dist_worker.py"), WORLD)
    results = {}
    for line in lines:
        _, rank, mode, _, plain, _, offloaded = line.split()
        assert plain == offloaded, line
        results.setdefault(mode, set()).add(plain)
    assert sorted(results) == ["ddp", "zero"], results
    assert all(len(v) == 1 for v in results.values()), results
