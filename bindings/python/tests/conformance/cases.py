# SPDX-License-Identifier: MIT
"""The conformance cases: what torch's own optimizer tests check, written
for umtorch. Each case takes an Env (env.opt(cls, params, **kw) makes the
optimizer: plain, or offloaded on the suite's shared Context) and returns
the tensors it ended with (parameters, state); the runner compares those
of every offloaded run with the plain run's, bit for bit.

Covered: basic convergence of every optimizer in its variants (flat
parameter list, per-group options, a non-contiguous weight, LR
schedulers), state_dict round trips (a copy loaded into a fresh
optimizer continues identically, the dict loaded is not changed, one
dict loaded twice gives one run, a checkpoint with numeric steps),
param groups added mid-run, sparse gradients (an Embedding's, and
hand-made ones on parameters packed into one region), complex parameters,
duplicate parameters, parameters without gradients, skipped steps and
backward passes no step follows, foreach and maximize variants.
"""

import copy
import functools
import warnings

import torch

O = torch.optim
ITERS = 25


def _configs():
    """(name, class, kwargs) of every optimizer variant tested."""
    out = [
        ("SGD", O.SGD, dict(lr=1e-3)),
        ("SGD-momentum", O.SGD, dict(lr=1e-3, momentum=0.9)),
        ("SGD-dampening", O.SGD, dict(lr=1e-3, momentum=0.9,
                                      dampening=0.5)),
        ("SGD-nesterov", O.SGD, dict(lr=1e-3, momentum=0.9,
                                     nesterov=True, weight_decay=0.1)),
        ("SGD-wd-maximize", O.SGD, dict(lr=1e-3, momentum=0.5,
                                        weight_decay=0.1, maximize=True)),
        ("SGD-foreach", O.SGD, dict(lr=1e-3, momentum=0.9, foreach=True)),
        ("Adam", O.Adam, dict(lr=1e-2)),
        ("Adam-amsgrad", O.Adam, dict(lr=1e-2, amsgrad=True)),
        ("Adam-wd-maximize", O.Adam, dict(lr=1e-2, weight_decay=0.1,
                                          maximize=True)),
        ("Adam-foreach", O.Adam, dict(lr=1e-2, foreach=True,
                                      amsgrad=True)),
        ("AdamW", O.AdamW, dict(lr=1e-2)),
        ("AdamW-amsgrad", O.AdamW, dict(lr=1e-2, amsgrad=True)),
        ("AdamW-foreach", O.AdamW, dict(lr=1e-2, foreach=True)),
        ("Adagrad", O.Adagrad, dict(lr=1e-1)),
        ("Adagrad-init-decay", O.Adagrad, dict(
            lr=1e-1, initial_accumulator_value=0.1, lr_decay=1e-3)),
        ("Adagrad-foreach", O.Adagrad, dict(lr=1e-1, foreach=True)),
        ("Adadelta", O.Adadelta, dict()),
        ("Adadelta-rho-wd", O.Adadelta, dict(rho=0.95, weight_decay=0.1)),
        ("Adamax", O.Adamax, dict(lr=1e-1)),
        ("Adamax-wd", O.Adamax, dict(lr=1e-1, weight_decay=0.1)),
        ("RMSprop", O.RMSprop, dict(lr=1e-2)),
        ("RMSprop-centered", O.RMSprop, dict(lr=1e-2, centered=True)),
        ("RMSprop-momentum", O.RMSprop, dict(lr=1e-2, momentum=0.5,
                                             centered=True,
                                             weight_decay=0.1)),
        ("Rprop", O.Rprop, dict(lr=2e-4)),
        ("Rprop-etas", O.Rprop, dict(lr=1e-3, etas=(0.6, 1.1),
                                     step_sizes=(1e-6, 1))),
        ("ASGD", O.ASGD, dict(lr=1e-2)),
        ("ASGD-t0", O.ASGD, dict(lr=1e-2, t0=5, weight_decay=0.1)),
        ("NAdam", O.NAdam, dict(lr=1e-2)),
        ("NAdam-decay", O.NAdam, dict(lr=1e-2, momentum_decay=6e-3,
                                      weight_decay=0.1)),
        ("RAdam", O.RAdam, dict(lr=1e-2)),
        ("RAdam-wd", O.RAdam, dict(lr=1e-2, weight_decay=0.1)),
    ]
    return out


def _supported(cls, kw):
    """Variants this torch accepts (foreach and maximize came late)."""
    try:
        cls([torch.zeros(1, requires_grad=True)], **kw)
        return True
    except (TypeError, ValueError):
        return False


CONFIGS = [(n, c, k) for n, c, k in _configs() if _supported(c, k)]


# ---- the problem torch's tests use: a 10x5 linear map and its bias ------

def _problem(seed=0, noncontig=False, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    if noncontig:
        weight = torch.randn(10, 5, 2, generator=g, dtype=dtype)[..., 0]
    else:
        weight = torch.randn(10, 5, generator=g, dtype=dtype)
    bias = torch.randn(10, generator=g, dtype=dtype)
    x = torch.randn(5, generator=g, dtype=dtype)
    weight.requires_grad_()
    bias.requires_grad_()
    return weight, bias, x


def _loss(weight, bias, x):
    return (weight.mv(x) + bias).pow(2).sum()


def _closure(opt, weight, bias, x):
    def closure():
        opt.zero_grad()
        loss = _loss(weight, bias, x)
        loss.backward()
        return loss
    return closure


def _flat_state(sd):
    """The tensors and numbers of a state_dict, in a fixed order."""
    out = []
    for index in sorted(sd["state"]):
        for key in sorted(sd["state"][index]):
            v = sd["state"][index][key]
            if v is None:
                continue
            out.append(v if torch.is_tensor(v) else torch.tensor(float(v)))
    return out


def _groups(weight, bias, lr):
    return [{"params": [weight]}, {"params": [bias], "lr": lr}]


# ---- cases ---------------------------------------------------------------

def basic(cls, kw, env, layout="flat", sched=None):
    """Loss goes down over ITERS closure steps (torch's basic cases)."""
    weight, bias, x = _problem(noncontig=layout == "noncontig")
    kw = dict(kw)
    params = [weight, bias]
    if layout == "groups":
        params = _groups(weight, bias, kw.get("lr", 1.0) * 0.5)
    opt = env.opt(cls, params, **kw)
    schedulers = []
    if sched == "step":
        schedulers = [O.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)]
    elif sched == "plateau":
        schedulers = [O.lr_scheduler.ReduceLROnPlateau(opt, patience=2)]
    closure = _closure(opt, weight, bias, x)
    initial = _loss(weight, bias, x).item()
    for _ in range(ITERS):
        loss = opt.step(closure)
        for s in schedulers:
            if isinstance(s, O.lr_scheduler.ReduceLROnPlateau):
                s.step(loss.item())
            else:
                s.step()
    final = _loss(weight, bias, x).item()
    maximize = kw.get("maximize", False)
    assert (final > initial) if maximize else (final < initial), \
        (initial, final)
    return [weight, bias] + _flat_state(opt.state_dict())


def _load_copies():
    """Whether plain load_state_dict copies the dict's tensors (torch
    1.13) rather than keeping them as they are (2.x, where training
    then changes the dict)."""
    p = torch.zeros(2, requires_grad=True)
    opt = O.SGD([p], lr=0.1, momentum=0.9)
    buf = torch.ones(2)
    opt.load_state_dict({"state": {0: {"momentum_buffer": buf}},
                         "param_groups": opt.state_dict()["param_groups"]})
    return opt.state[p]["momentum_buffer"] is not buf


def state_dict(cls, kw, env):
    """A deep copy of state_dict() loaded into a fresh optimizer over
    cloned parameters continues exactly as the original; the loaded
    dict is not changed by the load or by training (where plain torch
    copies it; else each load is given a copy of its own); one dict
    loaded into two optimizers gives the same run twice."""
    weight, bias, x = _problem(1)
    opt = env.opt(cls, _groups(weight, bias, kw.get("lr", 1.0)), **kw)
    closure = _closure(opt, weight, bias, x)
    for _ in range(10):
        opt.step(closure)
    saved = copy.deepcopy(opt.state_dict())
    reference = copy.deepcopy(saved)
    runs, copies = [], _load_copies()
    for _ in range(2):
        w2 = weight.detach().clone().requires_grad_()
        b2 = bias.detach().clone().requires_grad_()
        opt2 = env.opt(cls, _groups(w2, b2, kw.get("lr", 1.0)), **kw)
        opt2.load_state_dict(saved if copies else copy.deepcopy(saved))
        assert _same(_flat_state(opt2.state_dict()),
                     _flat_state(reference)), "state after load"
        closure2 = _closure(opt2, w2, b2, x)
        for _ in range(10):
            opt2.step(closure2)
        runs.append((w2, b2, opt2))
        assert _same(_flat_state(saved), _flat_state(reference)), \
            "the loaded dict changed"
    for _ in range(10):
        opt.step(closure)
    for w2, b2, opt2 in runs:
        assert torch.equal(w2, weight) and torch.equal(b2, bias)
        assert _same(_flat_state(opt2.state_dict()),
                     _flat_state(opt.state_dict()))
        assert opt2.state_dict()["param_groups"] == \
            opt.state_dict()["param_groups"]
    return [weight, bias] + _flat_state(opt.state_dict())


def numeric_steps(cls, kw, env):
    """A checkpoint whose 'step' entries are numbers (older torch) loads
    and trains: the optimizer's own conversion runs."""
    weight, bias, x = _problem(2)
    opt = env.opt(cls, [weight, bias], **kw)
    closure = _closure(opt, weight, bias, x)
    for _ in range(5):
        opt.step(closure)
    sd = copy.deepcopy(opt.state_dict())
    for s in sd["state"].values():
        if torch.is_tensor(s.get("step")):
            s["step"] = float(s["step"].item())
    w2 = weight.detach().clone().requires_grad_()
    b2 = bias.detach().clone().requires_grad_()
    opt2 = env.opt(cls, [w2, b2], **kw)
    opt2.load_state_dict(sd)
    closure2 = _closure(opt2, w2, b2, x)
    for _ in range(5):
        opt2.step(closure2)
    return [w2, b2] + _flat_state(opt2.state_dict())


def added_group(cls, kw, env):
    """add_param_group() mid-run: the new group gets state and steps."""
    weight, bias, x = _problem(3)
    opt = env.opt(cls, [weight], **kw)
    closure = _closure(opt, weight, bias, x)
    for _ in range(5):
        opt.step(closure)
    opt.add_param_group({"params": [bias], "lr": kw.get("lr", 1.0) * 2})
    for _ in range(5):
        opt.step(closure)
    return [weight, bias] + _flat_state(opt.state_dict())


def some_without_grad(cls, kw, env):
    """Parameters whose grad is None are skipped and get no state; a step
    where no parameter has a gradient does nothing."""
    weight, bias, x = _problem(4)
    frozen = torch.randn(7, 3, requires_grad=True)
    opt = env.opt(cls, [weight, frozen, bias], **kw)
    opt.zero_grad()
    opt.step()			# no gradient at all
    before = frozen.detach().clone()
    closure = _closure(opt, weight, bias, x)
    for _ in range(5):
        opt.step(closure)
    assert torch.equal(frozen, before)
    sd = opt.state_dict()
    if cls is not O.Adagrad:	# Adagrad makes its state in __init__
        assert 1 not in sd["state"], sorted(sd["state"])
    return [weight, bias, frozen] + _flat_state(sd)


def skipped_steps(cls, kw, env):
    """A GradScaler-like loop: backward every iteration, some steps
    skipped, and an evaluation backward at the end that no step follows;
    then the optimizer is dropped (the runner checks nothing is left)."""
    weight, bias, x = _problem(12)
    opt = env.opt(cls, [weight, bias], **kw)
    for i in range(8):
        opt.zero_grad()
        _loss(weight, bias, x).backward()
        if i % 3 != 1:
            opt.step()
    opt.zero_grad()
    _loss(weight, bias, x).backward()
    return [weight, bias] + _flat_state(opt.state_dict())


def duplicate_params(cls, kw, env):
    """A group listing a parameter twice warns (as torch does) and steps
    it as torch does; a parameter in two groups is refused."""
    weight, bias, x = _problem(5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opt = env.opt(cls, [weight, weight, bias], **kw)
    assert any("duplicate" in str(w.message) for w in caught), \
        [str(w.message) for w in caught]
    closure = _closure(opt, weight, bias, x)
    for _ in range(5):
        opt.step(closure)
    try:
        opt.add_param_group({"params": [weight]})
        raise AssertionError("a parameter in two groups was accepted")
    except ValueError:
        pass
    return [weight, bias] + _flat_state(opt.state_dict())


def complex_params(cls, kw, env):
    """A complex parameter steps as its real view does (torch's complex
    cases), plain or offloaded."""
    g = torch.Generator().manual_seed(6)
    a = torch.randn(8, 4, dtype=torch.complex64, generator=g)
    c = a.clone().requires_grad_()
    r = torch.view_as_real(a).clone().requires_grad_()
    oc = env.opt(cls, [c], **kw)
    orr = env.opt(cls, [r], **kw)
    target = torch.randn(8, 4, dtype=torch.complex64, generator=g)
    for _ in range(5):
        for opt, p in ((oc, c), (orr, r)):
            opt.zero_grad()
            z = p if p.is_complex() else torch.view_as_complex(p)
            (z - target).abs().pow(2).sum().backward()
            opt.step()
    assert torch.allclose(torch.view_as_real(c), r, atol=1e-5), \
        (torch.view_as_real(c) - r).abs().max()
    return [c, r] + _flat_state(oc.state_dict())


def sparse(cls, kw, env):
    """Sparse gradients (an Embedding with sparse=True) for the
    optimizers that take them."""
    torch.manual_seed(7)
    emb = torch.nn.Embedding(50, 6, sparse=True)
    dense = torch.nn.Linear(6, 1)
    kw = dict(kw)
    if cls is O.SparseAdam:
        opt = env.opt(cls, list(emb.parameters()), **kw)
        dopt = env.opt(O.Adam, list(dense.parameters()), lr=kw["lr"])
    else:
        opt = env.opt(cls, list(emb.parameters()) +
                      list(dense.parameters()), **kw)
        dopt = None
    g = torch.Generator().manual_seed(8)
    for _ in range(8):
        idx = torch.randint(0, 50, (12,), generator=g)
        opt.zero_grad()
        if dopt:
            dopt.zero_grad()
        dense(emb(idx)).pow(2).sum().backward()
        opt.step()
        if dopt:
            dopt.step()
    return list(emb.parameters()) + list(dense.parameters()) + \
        _flat_state(opt.state_dict())


def sparse_packed(cls, kw, env):
    """Sparse gradients made by hand (torch.sparse_coo_tensor, a row
    repeated: not coalesced) of one to three rows on several 1-D and
    2-D parameters, which an offload packs into one region. The
    optimizers add the coalesced gradient's rows into dense state; torch
    1.13's sparse add gets a one-row update of a tensor at a non-zero
    storage offset wrong (it writes past the tensor), so state must sit
    at storage offset 0."""
    torch.manual_seed(12)
    params = [torch.randn(n, requires_grad=True) for n in (40, 3, 65)]
    params.append(torch.randn(9, 5, requires_grad=True))
    opt = env.opt(cls, params, **kw)
    g = torch.Generator().manual_seed(13)
    for step in range(6):
        opt.zero_grad()
        for p in params:	# 1 to 3 rows, the first twice
            rows = torch.randint(0, p.shape[0], (1 + step % 3,),
                                 generator=g)
            rows = torch.cat([rows, rows[:1]])
            values = torch.randn((len(rows),) + tuple(p.shape[1:]),
                                 generator=g)
            p.grad = torch.sparse_coo_tensor(rows.unsqueeze(0), values,
                                             p.shape)
        opt.step()
    return params + _flat_state(opt.state_dict())


def sparse_refused(cls, kw, env):
    """An optimizer that takes no sparse gradient says so, in torch's
    words, and changes nothing."""
    torch.manual_seed(9)
    emb = torch.nn.Embedding(20, 4, sparse=True)
    opt = env.opt(cls, emb.parameters(), **kw)
    before = emb.weight.detach().clone()
    emb(torch.tensor([1, 2, 3])).sum().backward()
    try:
        opt.step()
        raise AssertionError("a sparse gradient was accepted")
    except RuntimeError as e:
        assert "sparse" in str(e), e
    assert torch.equal(before, emb.weight)
    return [emb.weight]


def _same(a, b):
    a = [x.to_dense() if x.is_sparse else x for x in a]
    b = [x.to_dense() if x.is_sparse else x for x in b]
    return len(a) == len(b) and all(
        x.shape == y.shape and x.dtype == y.dtype and torch.equal(x, y)
        for x, y in zip(a, b))


def cases():
    """[(name, fn(env) -> tensors)]"""
    out = []
    complex_ok = (O.SGD, O.Adam, O.AdamW, O.Adagrad, O.RMSprop,
                  O.Adadelta)
    for name, cls, kw in CONFIGS:
        p = functools.partial
        out += [
            ("%s basic" % name, p(basic, cls, kw)),
            ("%s groups" % name, p(basic, cls, kw, layout="groups")),
            ("%s noncontiguous" % name, p(basic, cls, kw,
                                          layout="noncontig")),
            ("%s state_dict" % name, p(state_dict, cls, kw)),
        ]
        if "-" not in name:
            out += [
                ("%s StepLR" % name, p(basic, cls, kw, sched="step")),
                ("%s ReduceLROnPlateau" % name, p(basic, cls, kw,
                                                  sched="plateau")),
                ("%s numeric steps" % name, p(numeric_steps, cls, kw)),
                # Adagrad makes its state in __init__: torch's own fails
                ("%s add_param_group" % name, p(added_group, cls, kw))
                if cls is not O.Adagrad else None,
                ("%s no grad" % name, p(some_without_grad, cls, kw)),
                ("%s skipped steps" % name, p(skipped_steps, cls, kw)),
                ("%s duplicate params" % name, p(duplicate_params, cls,
                                                 kw)),
            ]
            if cls in complex_ok:
                out.append(("%s complex" % name, p(complex_params, cls,
                                                   kw)))
            if cls not in (O.SGD, O.Adagrad):
                out.append(("%s sparse refused" % name,
                            p(sparse_refused, cls, kw)))
    out = [c for c in out if c is not None]
    out += [
        ("SGD sparse", functools.partial(sparse, O.SGD, dict(lr=0.1))),
        ("SGD-momentum sparse", functools.partial(
            sparse, O.SGD, dict(lr=0.1, momentum=0.9))),
        ("Adagrad sparse", functools.partial(sparse, O.Adagrad,
                                             dict(lr=0.1))),
        ("SGD sparse packed", functools.partial(
            sparse_packed, O.SGD, dict(lr=0.1, momentum=0.9))),
        ("Adagrad sparse packed", functools.partial(
            sparse_packed, O.Adagrad, dict(lr=0.1, lr_decay=1e-3))),
    ]
    if hasattr(O, "SparseAdam"):
        out += [("SparseAdam sparse", functools.partial(
            sparse, O.SparseAdam, dict(lr=0.1))),
            ("SparseAdam sparse packed", functools.partial(
                sparse_packed, O.SparseAdam, dict(lr=0.1))),
            ("SparseAdam state_dict", functools.partial(
                sparse_state_dict, dict(lr=0.1)))]
    return out


def sparse_state_dict(kw, env):
    """SparseAdam's state through a state_dict round trip."""
    torch.manual_seed(10)
    emb = torch.nn.Embedding(30, 5, sparse=True)
    opt = env.opt(O.SparseAdam, list(emb.parameters()), **kw)
    g = torch.Generator().manual_seed(11)

    def step(o, e):
        o.zero_grad()
        e(torch.randint(0, 30, (9,), generator=g)).pow(2).sum().backward()
        o.step()
    for _ in range(4):
        step(opt, emb)
    emb2 = copy.deepcopy(emb)
    opt2 = env.opt(O.SparseAdam, list(emb2.parameters()), **kw)
    opt2.load_state_dict(copy.deepcopy(opt.state_dict()))
    for _ in range(4):
        step(opt2, emb2)
    return [emb2.weight] + _flat_state(opt2.state_dict())
