# SPDX-License-Identifier: MIT
"""torch's own optimizer data (optim_db) walked plain and offloaded.

torch 2.x ships every optimizer's description in
torch.testing._internal.common_optimizers.optim_db: its input
configurations (optim_inputs_func, with the foreach, fused and
differentiable variants it supports added as torch's own tests add them),
whether it takes sparse gradients and complex parameters, and the inputs
that must fail (optim_error_inputs_func). Nothing of torch's tests is used
but that data. For every optimizer and every input, these cases run
plain, then offloaded in the modes of run.py (overlap on, overlap off, a
region per parameter with per_parameter=True), with the same seed:

  train      a 2-D and a 1-D parameter, three steps, the 1-D one's grad
             None in the third; every hook torch has (global and
             per-optimizer step pre/post hooks, state_dict and
             load_state_dict pre/post hooks, some with prepend) logs its
             calls; then state_dict(), torch.save and
             torch.load(weights_only=True), the saved state loaded into a
             plain and into a new optimizer of the mode and a plain run's
             checkpoint into one of the mode, each stepped on twice;
             deepcopy (stepped on), repr
  zero-size  the steps and state_dict() with a parameter of no elements
             beside them (a case of its own: Adafactor and SparseAdam
             fail on it in plain torch)
  complex    the same with a complex parameter, where the optimizer
             supports them
  sparse     the same with sparse gradients of a 2-D and a 1-D parameter
             (packed in one region), where the optimizer takes them
  errors     one case per optimizer: each error input raises (or warns)
             torch's type and message

An offloaded run passes when it ends with the plain run's tensors bit for
bit and the same facts (hook calls in order, repr, non-tensor state and
groups, the errors seen), and no region is left. An optimizer umtorch
refuses at offload_optimizer (LBFGS) counts as refused, with its message.
A case plain torch fails is reported, not held against the offloaded runs.
Prints TAP and one closing line with the counts; exit 0 pass, 1 fail,
4 skip (torch without optim_db: 1.13).
"""

import copy
import gc
import io
import os
import re
import sys
import time
import traceback
import warnings
import weakref

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(os.path.dirname(HERE)), HERE]

try:
    import torch
except ImportError as e:
    print("1..0 # SKIP no torch: %s" % e)
    sys.exit(4)

try:
    from torch.testing._internal import common_optimizers as co
except ImportError as e:
    print("1..0 # SKIP torch %s has no optim_db "
          "(torch.testing._internal.common_optimizers): %s"
          % (torch.__version__, e))
    # counted as one skip by make check, which runs it under torch 1.13 too
    print("# Totals: pass:0 fail:0 xfail:0 xpass:0 skip:1 error:0")
    sys.exit(4)

from torch.optim.optimizer import (  # noqa: E402
    register_optimizer_step_post_hook, register_optimizer_step_pre_hook)
import umtorch  # noqa: E402
from run import Offloaded, Plain  # noqa: E402

STEPS = 3		# the grad of the 1-D parameter is None in the third
MORE = 2		# steps after a load, a deepcopy
DTYPE = torch.float32


class Refused(Exception):
    """offload_optimizer said no: umtorch's documented refusal."""


class Mode(Offloaded):
    def opt(self, cls, params, **kw):
        opt = cls(params, **kw)
        try:
            umtorch.offload_optimizer(opt, self.ctx, **self.offload_kw)
        except umtorch.UmError as e:
            raise Refused(str(e)) from None
        return opt


def inputs(info):
    """Every input of info on the CPU, the impl variants included, as
    torch's own tests add them; and foreach=True, which runs on the CPU
    too but which torch tests on accelerators only."""
    out = co._get_optim_inputs_including_global_cliquey_kwargs(
        "cpu", DTYPE, info)
    if "foreach" in info.supported_impls and \
            not any(oi.kwargs.get("foreach") for oi in out):
        for oi in info.optim_inputs_func(device="cpu"):
            out.append(co.OptimizerInput(
                params=None, kwargs=dict(copy.deepcopy(oi.kwargs),
                                         foreach=True),
                desc=oi.desc + " & foreach"))
    return out


def _grad(p, step, sparse):
    g = torch.Generator().manual_seed(1000 * step + p.numel())
    if p.is_complex():
        return torch.randn(p.shape, generator=g, dtype=p.dtype)
    dense = torch.randn(p.shape, generator=g, dtype=p.dtype)
    if not sparse:
        return dense
    rows = torch.tensor([[0, 2, 3]]) if p.shape[0] > 3 else \
        torch.tensor([[0]])
    return torch.sparse_coo_tensor(rows, dense[rows[0]], p.shape)


def _params(info, kind, differentiable):
    """The parameters of a case: (params, the one whose grad is None in
    step 3, whether grads are sparse)."""
    gen = torch.Generator().manual_seed(7)
    two_d = info.name == "Muon"		# Muon takes 2-D parameters only
    shapes = [(6, 4), (5, 3) if two_d else (8,)]
    if kind == "zero-size":
        shapes.append((0, 4) if two_d else (0,))
    ps = [torch.randn(s, generator=gen, dtype=DTYPE) for s in shapes]
    if kind == "complex":
        ps.append(torch.randn((3, 2) if two_d else (5,), generator=gen,
                              dtype=torch.complex64))
    ps = _clones(ps, differentiable)
    sparse = kind == "sparse" or info.only_supports_sparse_grads
    return ps, ps[1], sparse


def _clones(ps, differentiable):
    """Leaf parameters; with differentiable=True, tensors computed from
    them, as the step is then part of a graph (torch refuses in-place
    updates of leaves that require grad)."""
    ps = [torch.nn.Parameter(p.detach().clone()) for p in ps]
    return [p.clone() for p in ps] if differentiable else ps


def _saveable(sd):
    """sd with its tensors detached: torch.save refuses tensors of a
    graph (differentiable=True)."""
    return {"state": {i: {k: v.detach() if torch.is_tensor(v) else v
                          for k, v in s.items()}
                      for i, s in sd["state"].items()},
            "param_groups": sd["param_groups"]}


def _run_steps(opt, ps, n, first, none_at=None, sparse=False, info=None):
    for step in range(first, first + n):
        for p in ps:
            p.grad = None if p is none_at and step == 2 else \
                _grad(p, step, sparse)
        if info.step_requires_closure:
            opt.step(lambda: torch.tensor(float(step)))
        else:
            opt.step()


def _flat(sd, tensors, facts, tag):
    """sd's tensors into tensors, the rest (and where the tensors were)
    into facts."""
    for i in sorted(sd["state"]):
        for k in sorted(sd["state"][i]):
            v = sd["state"][i][k]
            if torch.is_tensor(v):
                tensors.append(v)
                facts.append((tag, i, k, str(v.dtype), tuple(v.shape)))
            else:
                facts.append((tag, i, k, repr(v)))
    for n, g in enumerate(sd["param_groups"]):
        for k in sorted(g):
            if torch.is_tensor(g[k]):
                tensors.append(g[k])
                facts.append((tag, "group", n, k))
            else:
                facts.append((tag, "group", n, k, repr(g[k])))


class Hooks:
    """Every hook torch has, logging (hook, optimizer) in call order."""

    def __init__(self):
        # by the optimizer, not its id: a collected one's id is reused
        self.log, self.names = [], weakref.WeakKeyDictionary()
        self.handles = []
        for n in range(2):
            self.handles += [
                register_optimizer_step_pre_hook(self._make("gpre%d" % n)),
                register_optimizer_step_post_hook(self._make("gpost%d" % n))]

    def _make(self, name):
        def hook(opt, *rest):
            self.log.append((name, self.names.get(opt, "?")))
        return hook

    def on(self, opt, name):
        self.names[opt] = name
        # the second of each registered with prepend: called first
        for n, prepend in ((1, False), (0, True)):
            opt.register_step_pre_hook(self._make("pre%d" % n))
            opt.register_step_post_hook(self._make("post%d" % n))
            opt.register_state_dict_pre_hook(self._make("sdpre%d" % n),
                                             prepend=prepend)
            opt.register_state_dict_post_hook(self._make("sdpost%d" % n),
                                              prepend=prepend)
            opt.register_load_state_dict_pre_hook(
                self._make("ldpre%d" % n), prepend=prepend)
            opt.register_load_state_dict_post_hook(
                self._make("ldpost%d" % n), prepend=prepend)
        return opt

    def remove(self):
        for h in self.handles:
            h.remove()


def case_light(info, oi, kind):
    """zero-size, complex, sparse: see the module's docstring."""
    def fn(env):
        tensors, facts = [], []
        diff = bool(oi.kwargs.get("differentiable"))
        ps, none_at, sparse = _params(info, kind, diff)
        opt = env.opt(info.optim_cls, ps, **copy.deepcopy(oi.kwargs))
        _run_steps(opt, ps, STEPS, 0, none_at, sparse, info)
        _flat(_saveable(opt.state_dict()), tensors, facts, "state_dict")
        return tensors + ps, facts
    return fn


def case_train(info, oi, kind):
    """train: see the module's docstring."""
    def fn(env):
        tensors, facts = [], []
        diff = bool(oi.kwargs.get("differentiable"))
        ps, none_at, sparse = _params(info, kind, diff)
        twin = _clones(ps, diff)
        kw = lambda: copy.deepcopy(oi.kwargs)	# noqa: E731
        hooks = Hooks()
        try:
            opt = hooks.on(env.opt(info.optim_cls, ps, **kw()), "main")
            ref = hooks.on(info.optim_cls(twin, **kw()), "plain twin")
            for o, q in ((opt, ps), (ref, twin)):
                _run_steps(o, q, STEPS, 0, q[1], sparse, info)
            tensors += ps
            sd = _saveable(opt.state_dict())
            _flat(sd, tensors, facts, "state_dict")
            buf = io.BytesIO()
            torch.save(sd, buf)
            buf.seek(0)
            loaded = torch.load(buf, weights_only=True)
            _flat(loaded, tensors, facts, "weights_only")
            plain_sd = _saveable(ref.state_dict())
            for name, src in (("into plain", sd), ("into mode", sd),
                              ("plain's into mode", plain_sd)):
                q = _clones(ps, diff)
                if name == "into plain":
                    o = info.optim_cls(q, **kw())
                else:
                    o = env.opt(info.optim_cls, q, **kw())
                hooks.on(o, name)
                o.load_state_dict(copy.deepcopy(src))
                _run_steps(o, q, MORE, STEPS, None, sparse, info)
                tensors += q
                _flat(o.state_dict(), tensors, facts, name)
                del o
            if not diff:	# no deepcopy of tensors of a graph
                dup = copy.deepcopy(opt)
                facts.append(("deepcopy", type(dup).__name__, repr(dup)))
                dparams = [p for g in dup.param_groups for p in g["params"]]
                _run_steps(dup, dparams, MORE, STEPS, None, sparse, info)
                tensors += dparams
            facts.append(("repr", repr(opt)))
            facts.append(("hooks", hooks.log))
        finally:
            hooks.remove()
        return tensors, facts
    return fn


def case_errors(info):
    def fn(env):
        facts = []
        for e in info.optim_error_inputs_func(device="cpu", dtype=DTYPE):
            oi = e.optimizer_error_input
            seen = None
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    if e.error_on == co.OptimizerErrorEnum.STEP_ERROR:
                        opt = env.opt(info.optim_cls, oi.params, **oi.kwargs)
                        if info.step_requires_closure:
                            opt.step(lambda: torch.tensor(0.0))
                        else:
                            opt.step()
                    else:
                        info.optim_cls(oi.params, **oi.kwargs)
                except Refused:
                    raise
                except Exception as x:
                    seen = x
            if issubclass(e.error_type, Warning):
                got = [w for w in caught
                       if issubclass(w.category, e.error_type)]
                ok = any(re.search(e.error_regex, str(w.message))
                         for w in got)
                facts.append((oi.desc, e.error_type.__name__, ok,
                              repr(seen)))
            else:
                ok = isinstance(seen, e.error_type) and \
                    re.search(e.error_regex, str(seen)) is not None
                facts.append((oi.desc, e.error_type.__name__, ok,
                              type(seen).__name__))
            if not ok:
                raise AssertionError("%s: wanted %s /%s/, got %r"
                                     % (oi.desc, e.error_type.__name__,
                                        e.error_regex, seen))
        return [], facts
    return fn


def cases():
    """(optimizer, input description, case, fn) of every case."""
    out = []
    for info in co.optim_db:
        for oi in inputs(info):
            out.append((info.name, oi.desc, "train",
                        case_train(info, oi, "train")))
            kinds = ["zero-size"]
            if info.supports_complex:
                kinds.append("complex")
            if info.supports_sparse and not info.only_supports_sparse_grads:
                kinds.append("sparse")
            for kind in kinds:
                out.append((info.name, oi.desc, kind,
                            case_light(info, oi, kind)))
        out.append((info.name, "error inputs", "errors", case_errors(info)))
    return out


def run_case(fn, env):
    """(tensors, facts, None) or (None, None, what went wrong); a Refused
    gives (None, None, Refused)."""
    try:
        torch.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tensors, facts = fn(env)
        tensors = [(t.to_dense() if t.is_sparse else t).detach().clone()
                   for t in tensors]
    except Refused as e:
        gc.collect()
        return None, None, e
    except Exception:
        return None, None, traceback.format_exc()
    return tensors, facts, env.leftovers()


def same(a, b):
    return len(a) == len(b) and all(
        x.shape == y.shape and x.dtype == y.dtype and
        torch.equal(x.resolve_conj(), y.resolve_conj())
        for x, y in zip(a, b))


def first_difference(a, b, where="fact"):
    """Where lists a (plain) and b (offloaded) first differ, in short."""
    for n, (x, y) in enumerate(zip(a, b)):
        if x == y:
            continue
        if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
            return first_difference(x, y, "%s %d" % (where, n))
        return "%s %d: plain %r, offloaded %r (after %r)" % (
            where, n, x, y, a[max(0, n - 3):n])
    return "%s: plain has %d items, offloaded %d; the first extra: %r" % (
        where, len(a), len(b), (a[len(b):] or b[len(a):])[:4])


def main():
    only = sys.argv[1:]
    todo = [c for c in cases()
            if not only or any(o in ": ".join(c[:3]) for o in only)]
    modes = [Mode("overlap on", {"device_budget": "64M"}, {}),
             Mode("overlap off", {"device_budget": "64M"},
                  {"overlap": False}),
             Mode("region per parameter", {"device_budget": "4M"},
                  {"min_bytes": 0, "per_parameter": True})]
    plain = Plain()
    gc.collect()
    gc.freeze()
    print("TAP version 13")
    print("1..%d" % (len(todo) * (1 + len(modes))))
    print("# %s, torch %s: %d optimizers, %d inputs, %d cases"
          % (sys.executable, torch.__version__, len(co.optim_db),
             len({c[:2] for c in todo if c[2] != "errors"}), len(todo)),
          flush=True)
    counts = {m: [0, 0, 0] for m in ["plain"] + [e.name for e in modes]}
    n = failed = 0
    t0 = time.monotonic()
    for opt_name, desc, kind, fn in todo:
        name = "%s: %s: %s" % (opt_name, desc, kind)
        want, wfacts, err = run_case(fn, plain)
        n += 1
        counts["plain"][1] += 1
        if err:
            print("ok %d %s [plain] # SKIP plain torch fails it: %s"
                  % (n, name, err.strip().splitlines()[-1]))
        else:
            counts["plain"][0] += 1
            print("ok %d %s [plain]" % (n, name), flush=True)
        for env in modes:
            n += 1
            got, facts, err = run_case(fn, env)
            if want is None:
                print("ok %d %s [%s] # SKIP plain torch fails it"
                      % (n, name, env.name))
                continue
            counts[env.name][1] += 1
            if isinstance(err, Refused):
                counts[env.name][2] += 1
                print("ok %d %s [%s] # SKIP refused at offload: %s"
                      % (n, name, env.name, err))
                continue
            if err is None and not same(got, want):
                err = "tensors differ from the plain run: %s" % [
                    i for i, (x, y) in enumerate(zip(got, want))
                    if x.shape != y.shape or not torch.equal(
                        x.resolve_conj(), y.resolve_conj())][:8]
            if err is None and facts != wfacts:
                err = "facts differ: " + first_difference(wfacts, facts)
            if err:
                failed += 1
                print("not ok %d %s [%s]" % (n, name, env.name))
                for line in err.splitlines():
                    print("# " + line)
            else:
                counts[env.name][0] += 1
                print("ok %d %s [%s]" % (n, name, env.name), flush=True)
    left = [e.ctx.close() for e in modes]
    if any(left):
        failed += 1
        print("# contexts closed with regions left: %s" % left)
    passed = sum(c[0] for c in counts.values())
    print("# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:%d error:0"
          % (passed, failed, n - passed - failed))
    print("# optim_db (%d optimizers x inputs, %d cases, %.0f s, torch %s):"
          " %s; regions left at close: %d"
          % (len({c[:2] for c in todo if c[2] != "errors"}), len(todo),
             time.monotonic() - t0, torch.__version__, ", ".join(
                 "%s %d/%d%s" % (k, v[0], v[1], " (%d refused)" % v[2]
                                 if v[2] else "")
                 for k, v in counts.items()), sum(left)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
