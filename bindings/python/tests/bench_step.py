# SPDX-License-Identifier: MIT
"""Optimizer step time side by side, on the sim backend: plain AdamW,
umtorch without overlap, umtorch with overlap (acquire ahead, evict behind,
first restore during backward), the three trained in lockstep in one
process (the order rotated every step, medians), plus the device peak
against the budget at step 1 and the bits compared. A benchmark: it prints
figures and fails only if the bits differ.

Usage: bench_step.py [--steps N] [--layers N] [--width N] [--threads N]
                     [--json] [--timeline PATH]
Where the time of umtorch's step goes (acquiring and waiting for the
bytes, binding the state and narrowing the groups, the optimizer's own
math, the rest: bucketing and bookkeeping) is printed per run, with the
load average before and after (a loaded machine's figures say so).
--threads sets torch's threads for all three runs; by default one CPU is
left to the sim's copies, which on a GPU run on DMA engines beside the
cores that compute (as umtrain does; Documentation/performance.rst).
--timeline writes the overlapped run's memory timeline (HTML, or SVG for
a .svg path).
"""

import argparse
import collections
import json
import os
import statistics
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE)]
import umtorch  # noqa: E402


def default_threads():
    """The CPUs this process may use, less one for the sim's copies."""
    return max(1, len(os.sched_getaffinity(0)) - 1)


def make_model(layers, width):
    torch.manual_seed(1)
    mods = []
    for _ in range(layers):
        mods += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*mods)


class Run:
    def __init__(self, label, args, budget, overlap):
        self.label = label
        self.model = make_model(args.layers, args.width)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-4)
        self.ctx = self.off = None
        self.times = []
        if overlap is not None:
            self.ctx = umtorch.Context(backend="sim", device_budget=budget,
                                       sim_capacity=4 * budget)
            if args.timeline and overlap:
                umtorch.record_history(self.ctx)
            self.off = umtorch.offload_optimizer(
                self.opt, self.ctx, model=self.model, overlap=overlap)
            self.off.timing = collections.Counter()

    def step(self, x, y):
        self.opt.zero_grad()
        loss = torch.nn.functional.mse_loss(self.model(x), y)
        loss.backward()
        t0 = time.perf_counter()
        self.opt.step()
        self.times.append(time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=default_threads())
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--timeline")
    args = ap.parse_args()
    if (args.steps < 2 or args.layers < 1 or args.width < 16
            or args.threads < 1):
        ap.error("need --steps >= 2, --layers >= 1, --width >= 16, "
                 "--threads >= 1")
    torch.set_num_threads(args.threads)
    params = args.layers * (args.width + 1) * args.width
    state = 2 * 4 * params
    budget = (state // 3 + (1 << 20) - 1) // (1 << 20) << 20
    runs = [Run("plain AdamW", args, budget, None),
            Run("umtorch, no overlap", args, budget, False),
            Run("umtorch, overlap", args, budget, True)]
    gen = torch.Generator().manual_seed(2)
    load0 = os.getloadavg()
    for s in range(args.steps):
        x = torch.randn(32, args.width, generator=gen)
        y = torch.randn(32, args.width, generator=gen)
        for k in range(len(runs)):		# rotate who goes first
            runs[(s + k) % len(runs)].step(x, y)
        if s == 0:
            peaks = [r.off.peak_device for r in runs[1:]]
            for r in runs[1:]:		# step 1 creates the state
                r.off.timing.clear()
    same = all(torch.equal(p, q) for r in runs[1:] for p, q in
               zip(runs[0].model.parameters(), r.model.parameters()))
    # step 1 creates the state: its own figure, not in the medians
    med = [statistics.median(r.times[1:]) * 1e3 for r in runs]
    out = {"params": params, "state_bytes": state, "budget_bytes": budget,
           "steps": args.steps, "threads": torch.get_num_threads(),
           "bit_identical": same,
           "step1_device_peak_bytes": peaks,
           "median_step_ms": {r.label: m for r, m in zip(runs, med)},
           "ratio_to_plain": {r.label: m / med[0]
                              for r, m in zip(runs, med)}}
    out["load_average"] = {"before": load0, "after": os.getloadavg()}
    for r in runs[1:]:
        st = umtorch.memory_stats(r.ctx)
        out.setdefault("migrated_bytes", {})[r.label] = st["migrations.bytes"]
        t = r.off.timing
        n = max(t["steps"], 1)
        parts = {k: t[k] / n * 1e3 for k in (
            "wait for restores and evictions before", "acquire and wait",
            "bind, unbind, release, evict", "optimizer math")}
        parts["bucketing and the rest"] = t["step"] / n * 1e3 - \
            sum(parts.values())
        out.setdefault("mean_step_ms_by_part", {})[r.label] = parts
        out.setdefault("buckets_per_step", {})[r.label] = t["buckets"] / n
    if args.timeline:
        umtorch.timeline(args.timeline, runs[2].ctx,
                         title="umtorch: AdamW, %d steps, state %.0f MiB, "
                         "budget %.0f MiB" % (args.steps, state / 2**20,
                                             budget / 2**20))
    for r in runs[1:]:
        r.off.detach()
        r.ctx.close()
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print("AdamW on %d x Linear(%d, %d): state %.1f MiB, budget %.1f MiB"
              " (sim), %d steps, %d torch threads"
              % (args.layers, args.width, args.width, state / 2**20,
                 budget / 2**20, args.steps, torch.get_num_threads()))
        for r, m in zip(runs, med):
            print("  %-22s %8.2f ms per optimizer step  %.2fx plain"
                  % (r.label, m, m / med[0]))
        for r in runs[1:]:
            parts = out["mean_step_ms_by_part"][r.label]
            print("  %-22s where the time goes (mean ms): %s" % (
                r.label, ", ".join("%s %.2f" % kv for kv in parts.items())))
        print("  load average %s before, %s after" % (
            " ".join("%.2f" % x for x in load0),
            " ".join("%.2f" % x for x in os.getloadavg())))
        print("  step-1 device peak: %s bytes (budget %d)"
              % (" / ".join(map(str, peaks)), budget))
        print("  bit-identical: %s" % ("yes" if same else "NO"))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
