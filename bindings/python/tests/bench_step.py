# SPDX-License-Identifier: MIT
"""Optimizer step time side by side, on the sim backend: plain AdamW,
umtorch without overlap, umtorch with overlap (acquire ahead, evict behind,
first restore during backward), and plain AdamW beside copies of as many
bytes as the overlapped run migrated in its last step (made by a thread of
its own, as the sim's copies are: what the copies alone cost this
machine's math), the four trained in lockstep in one process (the order
rotated every step, medians), plus the device peak against the budget at
step 1 and the bits compared. A benchmark: it prints figures and fails
only if the bits differ.

Usage: bench_step.py [--steps N] [--layers N] [--width N] [--threads N]
                     [--budget FRACTION] [--json] [--timeline PATH]
--budget: the device budget as a fraction of the state (default 1/3); at
1 or more nothing moves, and what is left of the ratio is umtorch's own
bookkeeping.
Where the time of umtorch's step goes (acquiring and waiting for the
bytes, binding the state and narrowing the groups, the optimizer's own
math, the rest: bucketing and bookkeeping) is printed per run, with the
load average before and after (a loaded machine's figures say so).
--threads sets torch's threads for all three runs; by default one CPU is
left to the sim's copies, which on a GPU run on DMA engines beside the
cores that compute (as umtrain does; Documentation/performance.rst).
--timeline writes the overlapped run's memory timeline (HTML, or SVG for
a .svg path).
--python PY (given twice or more: Debian's torch 1.13 and the venv's 2.x,
say) runs the benchmark under each interpreter instead, one after the
other and --rounds times over (alternating, medians of the rounds), and
prints the figures side by side in one table.
"""

import argparse
import ctypes
import collections
import json
import os
import statistics
import subprocess
import sys
import threading
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


class CopyLoad:
    """A thread copying a given number of bytes in 8 MiB pieces, one
    region's worth at a time, with the GIL released (ctypes.memmove), as
    the sim's queue threads copy a migration."""

    PIECE = 8 << 20

    def __init__(self):
        self.src = torch.ones(self.PIECE, dtype=torch.uint8)
        self.dst = torch.zeros(self.PIECE, dtype=torch.uint8)
        self.todo = 0
        self.cv = threading.Condition()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            with self.cv:
                while self.todo <= 0:
                    self.cv.wait()
                n = min(self.todo, self.PIECE)
            ctypes.memmove(self.dst.data_ptr(), self.src.data_ptr(), n)
            with self.cv:
                self.todo -= n
                self.cv.notify_all()

    def start(self, nbytes):
        with self.cv:
            self.todo = nbytes
            self.cv.notify_all()

    def wait(self):
        with self.cv:
            while self.todo > 0:
                self.cv.wait()


class Run:
    def __init__(self, label, args, budget, overlap, copies=None):
        self.label = label
        self.copies = copies	# (CopyLoad, bytes to copy beside a step)
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
        if self.copies:
            self.copies[0].start(self.copies[1]())
        self.opt.step()
        self.times.append(time.perf_counter() - t0)
        if self.copies:
            self.copies[0].wait()

    def migrated(self):
        return umtorch.memory_stats(self.ctx)["migrations.bytes"]


def side_by_side(args, argv):
    """Runs this benchmark under each of args.python (JSON) and prints the
    figures in columns; fails if any run's bits differ."""
    rest, skip = [], False
    for a in argv:			# the arguments but --python/--rounds
        if skip:
            skip = False
        elif a in ("--python", "--rounds"):
            skip = True
        elif not a.startswith(("--python=", "--rounds=")):
            rest.append(a)
    got = {py: [] for py in args.python}
    for _ in range(args.rounds):
        for py in args.python:
            out = subprocess.run([py, os.path.abspath(__file__), "--json"] +
                                 rest, capture_output=True, text=True)
            if out.returncode not in (0, 1) or not out.stdout.strip():
                sys.stderr.write(out.stderr)
                sys.exit("bench_step: %s failed (status %d)"
                         % (py, out.returncode))
            got[py].append(json.loads(out.stdout))
    cols = [("torch " + got[py][0]["torch"], got[py]) for py in args.python]
    first = cols[0][1][0]
    print("AdamW on %d x Linear(%d, %d): state %.1f MiB, budget %.1f MiB "
          "(sim), %d steps, %d torch threads; medians of %d round(s)"
          % (args.layers, args.width, args.width,
             first["state_bytes"] / 2**20, first["budget_bytes"] / 2**20,
             args.steps, first["threads"], args.rounds))
    print("  %-25s" % "ms per optimizer step" +
          "".join("%24s" % c for c, _ in cols))

    def med(runs, f):
        return statistics.median(f(r) for r in runs)
    for label in first["median_step_ms"]:
        row = "  %-25s" % label
        for _, runs in cols:
            ms = med(runs, lambda r: r["median_step_ms"][label])
            ratio = med(runs, lambda r: r["ratio_to_plain"][label])
            row += "%24s" % ("%.2f (%.2fx plain)" % (ms, ratio))
        print(row)
    for label in first["ratio_to_plain_beside_the_copies"]:
        row = "  %-25s" % (label.replace("umtorch, ", "") +
                           " / copies floor")
        for _, runs in cols:
            row += "%24s" % ("%.2fx" % med(runs, lambda r: r[
                "ratio_to_plain_beside_the_copies"][label]))
        print(row)
    print("  %-25s" % "copied a step (MiB)" + "".join(
        "%24s" % ("%.1f" % (med(runs, lambda r: r[
            "copied_beside_plain_bytes_per_step"]) / 2**20))
        for _, runs in cols))
    same = all(r["bit_identical"] for _, runs in cols for r in runs)
    print("  %-25s" % "bit-identical" + "".join(
        "%24s" % ("yes" if all(r["bit_identical"] for r in runs) else "NO")
        for _, runs in cols))
    print("  load average %s now" % " ".join("%.2f" % x
                                             for x in os.getloadavg()))
    return 0 if same else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=default_threads())
    ap.add_argument("--budget", type=float, default=1 / 3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--timeline")
    ap.add_argument("--python", action="append", default=[])
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    if args.python:
        if args.json or args.timeline or args.rounds < 1:
            ap.error("--python goes without --json and --timeline, with "
                     "--rounds >= 1")
        return side_by_side(args, sys.argv[1:])
    if (args.steps < 2 or args.layers < 1 or args.width < 16
            or args.threads < 1 or not 0 < args.budget <= 16):
        ap.error("need --steps >= 2, --layers >= 1, --width >= 16, "
                 "--threads >= 1, 0 < --budget <= 16")
    torch.set_num_threads(args.threads)
    params = args.layers * (args.width + 1) * args.width
    state = 2 * 4 * params
    budget = (int(state * args.budget) + (1 << 20) - 1) // (1 << 20) << 20
    runs = [Run("plain AdamW", args, budget, None),
            Run("umtorch, no overlap", args, budget, False),
            Run("umtorch, overlap", args, budget, True)]
    last_step = {"before": 0, "bytes": 0}	# the overlapped run's
    runs.append(Run("plain beside the copies", args, budget, None,
                    (CopyLoad(), lambda: last_step["bytes"])))
    offloaded = runs[1:3]
    gen = torch.Generator().manual_seed(2)
    load0 = os.getloadavg()
    for s in range(args.steps):
        x = torch.randn(32, args.width, generator=gen)
        y = torch.randn(32, args.width, generator=gen)
        for k in range(len(runs)):		# rotate who goes first
            run = runs[(s + k) % len(runs)]
            run.step(x, y)
            if run is runs[2]:
                now = run.migrated()
                last_step.update(before=now,
                                 bytes=now - last_step["before"])
        if s == 0:
            peaks = [r.off.peak_device for r in offloaded]
            for r in offloaded:		# step 1 creates the state
                r.off.timing.clear()
    same = all(torch.equal(p, q) for r in runs[1:] for p, q in
               zip(runs[0].model.parameters(), r.model.parameters()))
    # step 1 creates the state: its own figure, not in the medians
    med = [statistics.median(r.times[1:]) * 1e3 for r in runs]
    out = {"torch": torch.__version__,
           "params": params, "state_bytes": state, "budget_bytes": budget,
           "steps": args.steps, "threads": torch.get_num_threads(),
           "bit_identical": same,
           "step1_device_peak_bytes": peaks,
           "median_step_ms": {r.label: m for r, m in zip(runs, med)},
           "ratio_to_plain": {r.label: m / med[0]
                              for r, m in zip(runs, med)},
           "ratio_to_plain_beside_the_copies": {
               r.label: m / med[3] for r, m in zip(offloaded, med[1:3])},
           "copied_beside_plain_bytes_per_step": last_step["bytes"]}
    out["load_average"] = {"before": load0, "after": os.getloadavg()}
    for r in offloaded:
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
    for r in offloaded:
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
            print("  %-23s %8.2f ms per optimizer step  %.2fx plain%s"
                  % (r.label, m, m / med[0], "  %.2fx beside the copies"
                     % (m / med[3]) if r in offloaded else ""))
        print("  copies beside plain: %.1f MiB a step (the overlapped run's "
              "migrations)" % (last_step["bytes"] / 2**20))
        for r in offloaded:
            parts = out["mean_step_ms_by_part"][r.label]
            print("  %-23s where the time goes (mean ms): %s" % (
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
