# SPDX-License-Identifier: MIT
"""DDP and ZeroRedundancyOptimizer over gloo with 2 ranks: offloading
(each rank its own libum context; ZeRO: its local shard) gives the same
bits as the same run without offload, and the ranks agree."""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WORLD = 2


def test_ddp_and_zero_two_ranks_bit_identical():
    # Loopback: both ranks are here, and a CI container's hostname may
    # not resolve to an address gloo can use.
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo")
    with tempfile.TemporaryDirectory() as tmp:
        init = os.path.join(tmp, "rendezvous")
        procs = [subprocess.Popen(
            [sys.executable, os.path.join(HERE, "dist_worker.py"), str(r),
             str(WORLD), init], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=env)
            for r in range(WORLD)]
        try:
            outs = [p.communicate(timeout=100) for p in procs]
        finally:
            for p in procs:		# a rank stuck waiting for the other
                if p.poll() is None:
                    p.kill()
                    p.wait()
    lines = []
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        lines += out.split("\n")
    results = {}
    for line in filter(None, lines):
        print("# " + line)
        _, rank, mode, _, plain, _, offloaded = line.split()
        assert plain == offloaded, line
        results.setdefault(mode, set()).add(plain)
    assert sorted(results) == ["ddp", "zero"], results
    assert all(len(v) == 1 for v in results.values()), results
