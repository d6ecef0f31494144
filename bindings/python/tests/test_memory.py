# SPDX-License-Identifier: MIT
"""memory_stats / reset_peak / memory_summary, the recorded history in
torch's snapshot format read by torch's own _memory_viz, the timeline and
the leak check."""

import gc
import os
import pickle
import subprocess
import sys
import tempfile

import torch

import umtorch
from common import BUDGET, context, model, train


def _trained(ctx):
    """(optimizer, offload, memory_stats) after two offloaded Adam steps."""
    m = model()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    off = umtorch.offload_optimizer(opt, ctx)
    train(m, opt, 2)
    return opt, off, umtorch.memory_stats(ctx)


def test_memory_stats_keys_and_peak_reset():
    with context() as ctx:
        opt, off, st = _trained(ctx)
        for key in ("allocated_bytes.all.current", "allocated_bytes.all.peak",
                    "reserved_bytes.all.current", "active_bytes.all.peak",
                    "num_ooms", "num_alloc_retries",
                    "tier.device.current", "tier.device.peak",
                    "tier.host.current", "tier.spill.peak",
                    "migrations.count", "tier.device.budget"):
            assert key in st, key
        assert st["allocated_bytes.all.current"] == off.nbytes
        assert st["allocated_bytes.all.peak"] >= off.nbytes
        assert 0 < st["tier.device.peak"] <= BUDGET
        assert st["tier.host.current"] > 0 and st["num_ooms"] == 0
        assert umtorch.memory_stats() == umtorch.memory_stats(ctx)
        for r in off.regions:		# nothing on the device any more
            r.evict("host")
        ctx.wait_all()
        umtorch.reset_peak_memory_stats(ctx)
        st = umtorch.memory_stats(ctx)
        assert st["tier.device.peak"] == st["tier.device.current"] == 0
        assert st["tier.device.peak_ever"] > 0
        text = umtorch.memory_summary(ctx)
        assert "On the device" in text and "Migrations" in text
        print("\n".join("# " + line for line in text.splitlines()))


def recorded_offload(ctx):
    """History recording on, then an offloaded Adam: (model, optimizer)."""
    umtorch.record_history(ctx)
    m = model()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    umtorch.offload_optimizer(opt, ctx, model=m)
    return m, opt


def test_reserved_bytes_are_the_device_bytes_within_the_budget():
    with context() as ctx:
        opt, off, st = _trained(ctx)
        assert off.nbytes > BUDGET		# the rest is on the host
        assert 0 < st["reserved_bytes.all.current"] <= BUDGET, st
        assert st["reserved_bytes.all.current"] == st["tier.device.current"]
        assert st["reserved_bytes.all.peak"] <= BUDGET, st
        del opt, off


def test_history_snapshot_read_by_torch_memory_viz():
    with context() as ctx, tempfile.TemporaryDirectory() as tmp:
        m, opt = recorded_offload(ctx)
        train(m, opt, 3)
        hist = umtorch.memory.history(ctx)
        actions = {e["action"] for e in hist.events}
        assert {"alloc", "migrated", "evicted"} <= actions, actions
        assert all(e["t_us"] >= 0 for e in hist.events)
        assert len(hist.samples) == 3 and hist.samples[-1]["host"] > 0
        path = os.path.join(tmp, "snap.pickle")
        umtorch.dump_snapshot(path, ctx)
        with open(path, "rb") as f:
            snap = pickle.load(f)
        from torch.cuda import _memory_viz
        # torch 1.13 reads a list of segments and has stats(); 2.1 on read
        # a dict and sum it up with segsum() (their `stats` command)
        segments = snap["segments"] if isinstance(snap, dict) else snap
        if hasattr(_memory_viz, "stats"):
            stats = _memory_viz.stats(snap)	# torch checks the sizes
            assert stats["segments"] == ctx.stats()["regions"]
            assert stats["active_allocated"].value > 0
            summed = "active_allocated"
        else:
            text = _memory_viz.segsum(snap)
            assert "segments: %d\n" % ctx.stats()["regions"] in text, text
            summed = "total_allocated: "
            assert summed + "0" not in text, text
        lines = _memory_viz.memory(snap, format_flamegraph=lambda s: s)
        # the allocating Python stack: this test, by parameter name
        assert "test_memory.py" in lines, lines[:500]
        assert any(s["name"] == "optim.2.weight" for s in segments)
        out = subprocess.run([sys.executable, "-m",
                              "torch.cuda._memory_viz", "stats", path],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and summed in out.stdout, out.stderr


def test_snapshot_frames_and_2_1_traces_as_torch_writes_them():
    """Frames innermost first (torch's viewer roots a flame graph at the
    outermost); the 2.1+ dict: device_traces with torch's own actions and
    the regions' real addresses, each alloc paired with its frees by
    address; um's migrations, evictions and pressure in um_traces."""
    with context() as ctx:
        m, opt = recorded_offload(ctx)
        train(m, opt, 3)
        snap = umtorch.snapshot(ctx)
        segments = snap["segments"] if isinstance(snap, dict) else snap
        seg = [s for s in segments if s["name"] == "optim.2.weight"][0]
        frames = seg["blocks"][0]["history"][0]["frames"]
        assert frames[0]["name"] == "alloc" and \
            frames[0]["filename"].endswith("context.py"), frames[0]
        assert "umtorch" not in frames[-1]["filename"], frames[-1]
        from torch.cuda import _memory_viz
        lines = _memory_viz.memory(snap, format_flamegraph=lambda s: s)
        # the program's frames, the call into umtorch, the allocation
        line = [x for x in lines.splitlines() if "test_memory.py" in x][0]
        assert ";optim.py:" in line and "_step_creating" not in line, line
        leaf = line.rsplit(" ", 1)[0].split(";")[-1]
        assert leaf.startswith("context.py:") and leaf.endswith(":alloc"), \
            line
        opt2 = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        umtorch.offload_optimizer(opt2, ctx)
        train(m, opt2, 1)
        del opt2
        gc.collect()			# its regions freed: frees traced
        d = umtorch.memory._snapshot(ctx, True)
        torch_actions = {"alloc", "free_requested", "free_completed",
                         "segment_alloc", "segment_free", "oom",
                         "segment_map", "segment_unmap", "snapshot"}
        traces = d["device_traces"][0]
        assert {t["action"] for t in traces} <= torch_actions
        allocs = {t["addr"] for t in traces if t["action"] == "alloc"}
        frees = [t["addr"] for t in traces
                 if t["action"] == "free_completed"]
        assert 0 not in allocs and len(allocs) == len(
            [t for t in traces if t["action"] == "alloc"])
        assert frees and all(a in allocs for a in frees), (allocs, frees)
        live = {s["address"] for s in d["segments"]}
        assert live <= allocs and not live & set(frees)
        assert all(b["address"] >= s["address"] for s in d["segments"]
                   for b in s["blocks"])
        um = {t["um_action"] for t in d["um_traces"]}
        assert {"migrated", "evicted"} <= um, um
        assert all(t["addr"] in allocs for t in d["um_traces"]
                   if t["um_action"] == "evicted")


def test_timeline_and_leak_check():
    with context() as ctx, tempfile.TemporaryDirectory() as tmp:
        m, opt = recorded_offload(ctx)
        kept = []
        for step in range(5):
            train(m, opt, 1)
            kept.append(ctx.alloc(4096, name="cache.%d" % step))
        leaks = umtorch.leak_check(ctx)
        assert list(leaks) == ["cache."], leaks	# not the optimizer's
        assert leaks["cache."] == [1, 2, 3, 4], leaks	# sampled at steps
        for path in ("t.html", "t.svg"):
            umtorch.timeline(os.path.join(tmp, path), ctx)
            text = open(os.path.join(tmp, path)).read()
            assert text.count("<polyline") == 5 and "<script" not in text
        assert text.startswith("<svg")
