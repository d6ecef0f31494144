# SPDX-License-Identifier: MIT
"""Memory analysis: torch.cuda's memory API over libum contexts.

memory_stats() uses torch.cuda.memory_stats()'s key names where they mean
the same thing (allocated_bytes.all.current, num_ooms, ...) and adds the
tiers; reset_peak_memory_stats(); memory_summary() as a table;
record_history() records allocations, frees, migrations and pressure with
timestamps and the Python stack of each allocating call, and per-step
samples of the bytes on each tier; snapshot()/dump_snapshot() save live
regions in torch.cuda.memory._snapshot()'s format (torch.cuda._memory_viz
reads it); timeline() writes a self-contained HTML/SVG plot of the bytes
per tier over steps with events marked; leak_check() names the regions
whose count grows step over step.
"""

import os
import pickle
import re
import time
import traceback

import torch

from .context import Context, live_contexts
from .errors import bad_type
from .state import GRANULE

_TIERS = ("device", "host", "spill")


def _contexts(ctx):
    if ctx is None:
        return live_contexts()
    if not isinstance(ctx, Context):
        raise bad_type("ctx", ctx, "umtorch.Context")
    return [ctx]


def _shim_stats():
    """The allocator shim's counters, if it is loaded (never loads it)."""
    from . import _lib
    if _lib._shim is None:
        return {}
    return {"shim.live_allocations": _lib._shim.um_torch_live(),
            "shim.failed_calls": _lib._shim.um_torch_error_count()}


def memory_stats(ctx=None, device=0):
    """A dict like torch.cuda.memory_stats(): bytes of live regions as
    allocated, the device bytes they take (whole 2 MiB granules mapped on
    the device, as torch's reserved segments are, never more than the
    budget) as reserved and active, num_ooms (acquires libum refused), then the tiers
    (tier.device.current/peak, ...), migrations, the sub-allocators'
    figures under torch's small_pool keys (allocated/requested/reserved
    bytes, allocation and segment counts, inactive_split_bytes: free bytes
    of segments in use) with suballoc.largest_free_block and
    suballoc.pending_bytes (freed, waiting for their stream), and the
    allocator shim's counters. ctx: one Context, default all open ones,
    summed."""
    out = {}

    def add(key, value):
        out[key] = out.get(key, 0) + value
    for c in _contexts(ctx):
        st = c.raw_stats()
        kinds = st.kind
        allocated = sum(kinds[k].current for k in range(len(kinds)))
        add("allocated_bytes.all.current", allocated)
        add("allocated_bytes.all.allocated",
            sum(kinds[k].total for k in range(len(kinds))))
        add("allocation.all.current", st.regions)
        add("active_bytes.all.current", st.device[device].current)
        add("active_bytes.all.peak", c._peaks.get("device", 0))
        add("reserved_bytes.all.current", st.device[device].current)
        add("reserved_bytes.all.peak", c._peaks.get("device", 0))
        add("num_ooms", st.nomem)
        add("num_alloc_retries", st.events[3])	# pressure events
        for tier, counter in zip(_TIERS, (st.device[device], st.host_total,
                                          st.spill)):
            add("tier.%s.current" % tier, counter.current)
            add("tier.%s.peak" % tier, c._peaks.get(tier, 0))
            add("tier.%s.peak_ever" % tier, counter.peak)
        add("tier.device.budget", st.budget[device])
        add("migrations.count", st.migrations)
        add("migrations.bytes", st.migrated_bytes)
        add("migrations.evictions", st.evict_count)
        add("migrations.restores", st.restore_count)
        add("allocated_bytes.all.peak", c._peaks.get("allocated", 0))
        sub = c.stats().get("suballoc", {})
        for key, field in (("allocated_bytes.small_pool.current", "allocated"),
                           ("requested_bytes.small_pool.current", "requested"),
                           ("reserved_bytes.small_pool.current", "reserved"),
                           ("allocation.small_pool.current", "blocks"),
                           ("allocation.small_pool.allocated", "allocs"),
                           ("segment.small_pool.current", "segments"),
                           ("segment.small_pool.allocated", "grows"),
                           ("inactive_split_bytes.small_pool.current",
                            "inactive_split"),
                           ("inactive_split_bytes.all.current",
                            "inactive_split"),
                           ("suballoc.pending_bytes", "pending")):
            add(key, sub.get(field, 0))
        out["suballoc.largest_free_block"] = max(
            out.get("suballoc.largest_free_block", 0),
            sub.get("largest_free", 0))
    out.update(_shim_stats())
    return dict(sorted(out.items()))


def reset_peak_memory_stats(ctx=None):
    """Peaks (tier.*.peak, active_bytes.all.peak) restart from now."""
    for c in _contexts(ctx):
        c._peaks = {}
        c.raw_stats()


def _size(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return ("%d %s" % (n, unit)) if unit == "B" else \
                "%.1f %s" % (n, unit)
        n /= 1024.0
    return str(n)


def memory_summary(ctx=None, device=0):
    """memory_stats() as a table, like torch.cuda.memory_summary()."""
    stats = memory_stats(ctx, device)
    rows = [("Metric", "Current", "Peak")]
    for label, key in (("Allocated (regions)", "allocated_bytes.all"),
                       ("On the device", "tier.device"),
                       ("In host memory", "tier.host"),
                       ("In the spill tier", "tier.spill")):
        rows.append((label, _size(stats.get(key + ".current", 0)),
                     _size(stats.get(key + ".peak", 0))))
    rows.append(("Device budget", _size(stats.get("tier.device.budget", 0)),
                 ""))
    rows.append(("Regions", str(stats.get("allocation.all.current", 0)),
                 ""))
    rows.append(("Migrations", "%d (%s)" % (stats.get("migrations.count", 0),
                                          _size(stats.get("migrations.bytes",
                                                          0))), ""))
    rows.append(("Refused (ENOMEM)", str(stats.get("num_ooms", 0)), ""))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    line = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    out = [line]
    for n, r in enumerate(rows):
        out.append("| " + " | ".join(c.ljust(w) if i == 0 else c.rjust(w)
                                     for i, (c, w) in
                                     enumerate(zip(r, widths))) + " |")
        if n == 0:
            out.append(line)
    out.append(line)
    return "\n".join(out)


class History:
    """What record_history() records for one context."""

    def __init__(self, max_entries, stack_depth):
        self.max_entries, self.stack_depth = max_entries, stack_depth
        self.t0 = time.monotonic_ns()
        self.events = []	# dicts: action, t_us, region name, bytes...
        self.samples = []	# per step: t_us, step, tiers, names counts
        self.frames = {}	# region handle -> allocating frames
        self.device_peak = 0	# the most on the device since the last step
        self.names = {}		# region handle -> (name, bytes)

    def sampled(self, device_bytes):
        self.device_peak = max(self.device_peak, device_bytes)

    def _now(self):
        return (time.monotonic_ns() - self.t0) // 1000

    def _add(self, entry):
        if len(self.events) < self.max_entries:
            entry["t_us"] = self._now()
            self.events.append(entry)

    def alloc(self, region):
        # innermost first, as torch records them (its viewer reverses)
        frames = [{"filename": f.filename, "line": f.lineno, "name": f.name}
                  for f in reversed(_program_stack()[-self.stack_depth:])]
        self.frames[region.handle] = frames
        self.names[region.handle] = (region.name or hex(region.handle),
                                     region.nbytes, region.ptr)
        self._add({"action": "alloc", "region": self.names[region.handle][0],
                   "bytes": region.nbytes, "addr": region.ptr,
                   "frames": frames})

    def free(self, region):
        self.free_handle(region.handle)

    def free_handle(self, handle):
        name, nbytes, addr = self.names.pop(handle, (hex(handle), 0, 0))
        self.frames.pop(handle, None)
        self._add({"action": "free", "region": name, "bytes": nbytes,
                   "addr": addr})

    def event(self, ev, device_free=None):
        region = getattr(ev.region, "name", None) or str(ev.region)
        handle = getattr(ev.region, "handle", ev.region)
        addr = self.names.get(handle, (None, 0, 0))[2]
        self._add({"action": ev.type, "region": region, "bytes": ev.bytes,
                   "addr": addr, "from": ev.from_tier, "to": ev.to_tier,
                   "error": ev.error, "level": ev.level, "ns": ev.ns,
                   "device_free": device_free})

    def step(self, ctx, offload):
        st = ctx.raw_stats()
        counts = {}
        for name, _, _ in self.names.values():
            group = re.sub(r"\d+$", "", name)
            counts[group] = counts.get(group, 0) + 1
        self.samples.append({
            "t_us": self._now(), "step": len(self.samples) + 1,
            "optimizer": offload.name if offload else None,
            "device": st.device[0].current,
            "device_peak": max(self.device_peak, st.device[0].current),
            "host": st.host_total.current,
            "spill": st.spill.current, "budget": st.budget[0],
            "regions": st.regions, "by_name": counts,
            "events": len(self.events)})
        self.device_peak = 0


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _program_stack():
    """The Python stack of the caller's caller, outermost first, with
    umtorch's own frames left out but the first of each run of them (the
    call the program made) and the innermost (where the region was
    allocated): the depth recorded is the program's."""
    stack = traceback.extract_stack()[:-3]
    out, ours_before = [], False
    for i, frame in enumerate(stack):
        ours = frame.filename.startswith(_PACKAGE)
        if not (ours and ours_before) or i == len(stack) - 1:
            out.append(frame)
        ours_before = ours
    return out


def record_history(ctx, enabled=True, max_entries=100000, stack_depth=8):
    """Start (or stop, enabled=False) recording ctx's history: allocs and
    frees with the allocating Python stack (stack_depth frames of the
    program's, umtorch's own left out but the call into it), migrations,
    evictions, pressure and refusals with timestamps, and a sample of the
    bytes on each tier after every offloaded optimizer step."""
    if not isinstance(ctx, Context):
        raise bad_type("ctx", ctx, "umtorch.Context")
    if not enabled:
        ctx._history = None
        return None
    ctx._history = History(max_entries, stack_depth)
    for region in list(ctx._regions.values()):
        if not region.freed:
            ctx._history.alloc(region)
    return ctx._history


def step_mark(ctx):
    """Record a step sample by hand (a loop without an offloaded
    optimizer)."""
    ctx._history_step(None)


def history(ctx):
    if ctx._history is None:
        raise ValueError("record_history(ctx) was not called")
    return ctx._history


def snapshot(ctx):
    """Live regions in torch.cuda.memory._snapshot()'s format: torch 1.13's
    list of segments (one per region: its bytes as an active_allocated
    block with the allocating stack, innermost frame first, the granule's
    rest inactive); torch 2.1 and later's dict adds device_traces from the
    history."""
    return _snapshot(ctx, _snapshot_is_dict())


# torch's trace actions for umtorch's history entries; migrations,
# evictions and pressure have none: they go to um_traces.
_TRACE_ACTIONS = {"alloc": ("segment_alloc", "alloc"),
                  "free": ("free_requested", "free_completed",
                           "segment_free"),
                  "nomem": ("oom",)}


def _snapshot(ctx, as_dict):
    hist = ctx._history
    segments = []
    for region in sorted((r for r in list(ctx._regions.values())
                          if not r.freed), key=lambda r: r.handle):
        info = region.info()
        total = -(-region.nbytes // GRANULE) * GRANULE
        frames = hist.frames.get(region.handle, []) if hist else []
        blocks = [{"size": region.nbytes, "state": "active_allocated",
                   "history": [{"addr": region.ptr,
                                "real_size": region.nbytes,
                                "frames": frames}]}]
        if total > region.nbytes:
            blocks.append({"size": total - region.nbytes,
                           "state": "inactive"})
        if as_dict:		# 2.1's block fields beside 1.13's
            addr = region.ptr
            for b in blocks:
                b.update(address=addr, requested_size=b["size"]
                         if b["state"] != "inactive" else 0,
                         frames=frames if b["state"] != "inactive" else [])
                addr += b["size"]
        segments.append({"device": region.device, "address": region.ptr,
                         "total_size": total,
                         "allocated_size": region.nbytes,
                         "active_size": region.nbytes,
                         "requested_size": region.nbytes, "stream": 0,
                         "segment_type": "large", "blocks": blocks,
                         "name": region.name, "kind": region.kind,
                         "tier": info["residency"]})
    if not as_dict:
        return segments
    traces, um_traces = [], []
    for e in (hist.events if hist else []):
        size = e["bytes"]
        base = {"addr": e.get("addr", 0), "size": size, "stream": 0,
                "frames": e.get("frames", []), "time_us": e["t_us"],
                "region": e["region"], "um_action": e["action"]}
        for action in _TRACE_ACTIONS.get(e["action"], ()):
            entry = dict(base, action=action)
            if action.startswith("segment_"):
                entry["size"] = -(-size // GRANULE) * GRANULE
            if action == "oom":	# torch: addr holds the bytes free
                entry["addr"] = entry["device_free"] = e["device_free"] or 0
            traces.append(entry)
        if e["action"] not in _TRACE_ACTIONS:
            um_traces.append(dict(base, **{k: e[k] for k in (
                "from", "to", "error", "level", "ns") if k in e}))
    return {"segments": segments, "device_traces": [traces],
            "um_traces": um_traces}


def _snapshot_is_dict():
    major, minor = (int(x) for x in torch.__version__.split(".")[:2])
    return (major, minor) >= (2, 1)


def dump_snapshot(path, ctx):
    """snapshot(ctx) pickled to path, as torch.cuda.memory._dump_snapshot
    does: python -m torch.cuda._memory_viz stats PATH reads it."""
    with open(path, "wb") as f:
        pickle.dump(snapshot(ctx), f)


def leak_check(ctx, steps=3):
    """Region names (trailing digits dropped) whose count grew in each of
    the last steps samples: {name: [counts...]}."""
    samples = history(ctx).samples[-(steps + 1):]
    if len(samples) < steps + 1:
        return {}
    out = {}
    for name in samples[-1]["by_name"]:
        counts = [s["by_name"].get(name, 0) for s in samples]
        if all(b > a for a, b in zip(counts, counts[1:])):
            out[name] = counts
    return out


def timeline(path, ctx, title="umtorch memory timeline"):
    """A self-contained HTML page (or, for a path ending in .svg, an SVG)
    plotting the bytes on each tier after every step, the budget, and the
    steps that saw refusals or pressure marked."""
    from ._svg import render
    svg = render(history(ctx), title)
    with open(path, "w") as f:
        if str(path).endswith(".svg"):
            f.write(svg)
        else:
            f.write("<!DOCTYPE html>\n<html><head><meta charset='utf-8'>"
                    "<title>%s</title></head><body>\n%s\n</body></html>\n"
                    % (title, svg))
