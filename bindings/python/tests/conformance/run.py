# SPDX-License-Identifier: MIT
"""The conformance suite (cases.py) run plain and offloaded side by side.

Every case runs plain first, then offloaded in three configurations on
one shared sim Context each, as a PyTorch user would offload every
optimizer a program makes: the defaults; a 4 MiB budget with a region per
parameter (min_bytes=0: every parameter a bucket of its own); and
overlap=False. An offloaded run passes when its case passes and its
tensors equal the plain run's bit for bit, and when, after it, no region
is left (the optimizers collected) and none is acquired. A case the plain
run fails is reported, not held against the offloaded runs. Prints TAP,
then one closing line with the counts. Exit 0 pass, 1 fail, 4 no torch.
"""

import gc
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(os.path.dirname(HERE)), HERE]

try:
    import torch
except ImportError as e:
    print("1..0 # SKIP no torch: %s" % e)
    sys.exit(4)

import umtorch  # noqa: E402
from umtorch.optim import _ahead_pool  # noqa: E402
import cases  # noqa: E402


class Plain:
    name = "plain"

    def opt(self, cls, params, **kw):
        return cls(params, **kw)

    def leftovers(self):
        return None


class Offloaded:
    def __init__(self, name, ctx_kw, offload_kw):
        self.name = name
        self.ctx = umtorch.Context(backend="sim", sim_capacity="256M",
                                   **ctx_kw)
        self.offload_kw = offload_kw

    def opt(self, cls, params, **kw):
        opt = cls(params, **kw)
        umtorch.offload_optimizer(opt, self.ctx, **self.offload_kw)
        return opt

    def leftovers(self):
        """What a case left behind once its optimizers are collected."""
        gc.collect()
        _ahead_pool().submit(lambda: None).result()
        alive = [r for r in list(self.ctx._regions.values()) if not r.freed]
        held = [r.name for r in alive if r.info()["acquired"]]
        if held:
            return "regions still acquired: %s" % held
        if alive or self.ctx.stats()["regions"]:
            return "%d regions left" % self.ctx.stats()["regions"]
        return None


def run_case(fn, env):
    """(tensors or None, error text or None)"""
    try:
        torch.manual_seed(0)
        got = fn(env)
        got = [(t.to_dense() if t.is_sparse else t).detach().clone()
               for t in got]
    except Exception:
        return None, traceback.format_exc()
    left = env.leftovers()
    return got, left


def same(a, b):
    return len(a) == len(b) and all(
        x.shape == y.shape and x.dtype == y.dtype and torch.equal(x, y)
        for x, y in zip(a, b))


def main():
    only = sys.argv[1:]
    todo = [(n, f) for n, f in cases.cases()
            if not only or any(o in n for o in only)]
    envs = [Offloaded("offloaded", {"device_budget": "64M"}, {}),
            Offloaded("budget 4M, region per parameter",
                      {"device_budget": "4M"}, {"min_bytes": 0}),
            Offloaded("overlap=False", {"device_budget": "64M"},
                      {"overlap": False})]
    plain = Plain()
    # torch's own objects are never garbage: keep the collection that
    # every case ends with to the objects made since.
    gc.collect()
    gc.freeze()
    print("TAP version 13")
    print("1..%d" % (len(todo) * (1 + len(envs))), flush=True)
    n = 0
    counts = {e.name: [0, 0] for e in [plain] + envs}
    failed = 0
    t0 = time.monotonic()
    for name, fn in todo:
        want, err = run_case(fn, plain)
        n += 1
        counts["plain"][1] += 1
        if err:
            print("ok %d %s [plain] # SKIP plain torch fails it" % (n, name))
            for line in err.splitlines():
                print("# " + line)
        else:
            counts["plain"][0] += 1
            print("ok %d %s [plain]" % (n, name), flush=True)
        for env in envs:
            n += 1
            got, err = run_case(fn, env)
            if want is None:
                print("ok %d %s [%s] # SKIP plain torch fails it"
                      % (n, name, env.name))
                continue
            counts[env.name][1] += 1
            if err is None and not same(got, want):
                err = "tensors differ from the plain run"
            if err:
                failed += 1
                print("not ok %d %s [%s]" % (n, name, env.name))
                for line in err.splitlines():
                    print("# " + line)
            else:
                counts[env.name][0] += 1
                print("ok %d %s [%s]" % (n, name, env.name), flush=True)
    left = [e.ctx.close() for e in envs]
    if any(left):
        failed += 1
        print("# contexts closed with regions left: %s" % left)
    total = sum(c[1] for c in counts.values())
    passed = sum(c[0] for c in counts.values())
    print("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:%d error:0"
          % (passed, failed, n - total))
    print("# conformance (%d cases, %.0f s, torch %s): %s; regions left "
          "at close: %d" % (len(todo), time.monotonic() - t0,
                            torch.__version__, ", ".join(
                                "%s %d/%d" % (k, v[0], v[1])
                                for k, v in counts.items()), sum(left)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
