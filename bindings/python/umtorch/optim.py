# SPDX-License-Identifier: MIT
"""Optimizer state in libum regions: offload_optimizer().

Each parameter's state tensors of the parameter's own shape (Adam's
exp_avg and exp_avg_sq, AdamW's, SGD's momentum_buffer, ...) live in one
region of kind optimizer_state, as tensors over its memory. The regions
are acquired only inside optimizer.step() and released after it, so
between steps libum may evict them under its budget.

When the state is larger than the budget it cannot all be resident at
once, so step() runs in buckets: the optimizer's own step is called once
per bucket of parameters (the param groups narrowed to that bucket) with
just that bucket's regions acquired. That is exact for every optimizer
whose update is per parameter (Adam, AdamW, SGD, RMSprop, Adagrad...): the
arithmetic per parameter is the one of an unbucketed step. It is not for
optimizers that look at all parameters at once (LBFGS), which are refused.
"""

import contextlib
import errno

import torch

from .context import Context
from .errors import UmError, UmValueError, bad_type, parse_size
from .views import empty

ALIGN = 256		# each state tensor starts on this boundary
GRANULE = 2 << 20	# device granularity of sim and the CUDA VMM backing


def _round(n, to):
    return (n + to - 1) // to * to


class _Slot:
    """One parameter's offloaded state: a region and the layout in it."""

    def __init__(self, region, layout):
        self.region = region
        self.layout = layout	# {key: (offset, dtype, shape)}

    @property
    def cost(self):
        return _round(self.region.nbytes, GRANULE)


class OptimizerOffload:
    """The offload of one optimizer's state; see offload_optimizer()."""

    def __init__(self, optimizer, ctx, min_bytes, bucket_bytes, priority,
                 name):
        self.optimizer, self.ctx = optimizer, ctx
        self.min_bytes, self.priority, self.name = min_bytes, priority, name
        self._bucket_bytes = bucket_bytes
        self._slots = {}	# param -> _Slot, or None: state kept plain
        self._orig = {n: getattr(optimizer, n)
                      for n in ("step", "state_dict", "load_state_dict")}
        # Instance attributes shadow the class's methods; removed at detach.
        optimizer.step = self.step
        optimizer.state_dict = self.state_dict
        optimizer.load_state_dict = self.load_state_dict
        ctx._offloads.add(self)
        self._adopt()
        self.attached = True

    # ---- layout -------------------------------------------------------

    def _params(self):
        """Parameters in param_groups order, each once (as torch numbers
        them in state_dict)."""
        seen, out = set(), []
        for group in self.optimizer.param_groups:
            for p in group["params"]:
                if id(p) not in seen:
                    seen.add(id(p))
                    out.append(p)
        return out

    def _offloadable(self, param, state):
        keys = [k for k, v in state.items() if torch.is_tensor(v)
                and v.shape == param.shape and v.numel() > 1]
        total = sum(state[k].numel() * state[k].element_size() for k in keys)
        return keys if keys and total >= self.min_bytes else []

    def _adopt(self):
        """Move state that appeared since the last step into regions."""
        for index, p in enumerate(self._params()):
            state = self.optimizer.state.get(p)
            if p in self._slots or not state:
                continue
            keys = self._offloadable(p, state)
            self._slots[p] = self._new_slot(index, state, keys) if keys \
                else None

    def _new_slot(self, index, state, keys):
        device = self.ctx.tensor_device()
        layout, size = {}, 0
        for k in keys:
            t = state[k]
            if str(t.device) != device and t.device != torch.device(device):
                raise UmValueError(-errno.EINVAL, "offload_optimizer",
                                   "state on %s, but %s backend views are "
                                   "on %s" % (t.device, self.ctx.backend,
                                              device))
            layout[k] = (size, t.dtype, tuple(t.shape))
            size = _round(size + t.numel() * t.element_size(), ALIGN)
        region = self.ctx.alloc(size, "optimizer_state",
                                "%s.p%d" % (self.name, index), self.priority)
        slot = _Slot(region, layout)
        try:
            with self._resident([slot]):
                for k, (off, dtype, shape) in layout.items():
                    view = region.tensor(dtype, shape, off)
                    view.copy_(state[k])
                    state[k] = view
        except BaseException:	# the state stays plain, nothing leaks
            region.free()
            raise
        return slot

    # ---- residency ----------------------------------------------------

    def bucket_bytes(self):
        """Device bytes one bucket may hold: the given value, else half the
        budget (the rest is for whatever else runs), at least one slot."""
        if self._bucket_bytes is not None:
            return self._bucket_bytes
        return self.ctx.budget() // 2

    def _buckets(self):
        """Parameters split so each bucket's slots fit bucket_bytes."""
        limit, buckets, cur, used = self.bucket_bytes(), [], [], 0
        for p in self._params():
            slot = self._slots.get(p)
            cost = slot.cost if slot else 0
            if cur and used + cost > limit:
                buckets.append(cur)
                cur, used = [], 0
            cur.append(p)
            used += cost
        return buckets + [cur] if cur else buckets

    def _stream(self):
        if self.ctx.backend != "cuda":
            return None
        return torch.cuda.current_stream().cuda_stream

    @contextlib.contextmanager
    def _resident(self, slots):
        """Acquire the regions of slots for the with block."""
        held, stream = [], self._stream()
        try:
            for slot in slots:
                slot.region.acquire(stream=stream)
                held.append(slot)
            yield
        finally:
            for slot in reversed(held):
                slot.region.release()

    @contextlib.contextmanager
    def _only(self, params):
        """Narrow every param group to params for the with block."""
        keep = set(map(id, params))
        groups = self.optimizer.param_groups
        saved = [g["params"] for g in groups]
        try:
            for g in groups:
                g["params"] = [p for p in g["params"] if id(p) in keep]
            yield
        finally:
            for g, params_of in zip(groups, saved):
                g["params"] = params_of

    def _live(self, what):
        if not self.attached:
            raise UmError(-errno.EBADF, what, "offload detached")
        self.ctx._ctx(what)

    # ---- the optimizer's methods ----------------------------------------

    def step(self, closure=None):
        """optimizer.step(), bucket by bucket with the state resident."""
        self._live("step")
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        buckets = self._buckets()
        for params in buckets:
            slots = [self._slots[p] for p in params if self._slots.get(p)]
            with self._resident(slots):
                if len(buckets) == 1:
                    self._orig["step"]()
                else:
                    with self._only(params):
                        self._orig["step"]()
        self._adopt()
        return loss

    def state_dict(self):
        """optimizer.state_dict() with plain copies of offloaded state (the
        regions are released by the time anyone reads them)."""
        self._live("state_dict")
        sd = self._orig["state_dict"]()
        params = self._params()
        for index, state in list(sd["state"].items()):
            slot = self._slots.get(params[index])
            if slot:
                with self._resident([slot]):
                    sd["state"][index] = {
                        k: v.clone() if k in slot.layout else v
                        for k, v in state.items()}
        return sd

    def load_state_dict(self, state_dict):
        """optimizer.load_state_dict(), the loaded state then offloaded."""
        self._live("load_state_dict")
        self._orig["load_state_dict"](state_dict)
        self._free_slots()
        self._adopt()

    # ---- teardown -----------------------------------------------------

    def _free_slots(self):
        for slot in filter(None, self._slots.values()):
            slot.region.free()
        self._slots = {}

    def detach(self):
        """Give the optimizer plain copies of its state, free the regions
        and restore its methods. Idempotent; Context.close() calls it."""
        if not getattr(self, "attached", False):
            return
        for p, slot in self._slots.items():
            if slot:
                state = self.optimizer.state[p]
                with self._resident([slot]):
                    for k in slot.layout:
                        view, state[k] = state[k], state[k].clone()
                        empty(view)
        self._free_slots()
        for n in self._orig:
            self.optimizer.__dict__.pop(n, None)
        self.ctx._offloads.discard(self)
        self.attached = False

    close = detach

    # LR schedulers count steps by wrapping optimizer.step, which is then
    # this object's method: their counter lives on the optimizer.
    @property
    def _step_count(self):
        return getattr(self.optimizer, "_step_count", 0)

    @_step_count.setter
    def _step_count(self, value):
        self.optimizer._step_count = value

    @property
    def regions(self):
        return [s.region for s in self._slots.values() if s]

    @property
    def nbytes(self):
        """Bytes of state held in regions."""
        return sum(r.nbytes for r in self.regions)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.detach()


def offload_optimizer(optimizer, ctx, *, min_bytes=64 << 10,
                      bucket_bytes=None, priority=0, name="optim"):
    """Keep optimizer's state in libum regions of ctx; returns the
    OptimizerOffload (detach() undoes it; so does ctx.close()).

    State appears lazily (Adam makes it in its first step): whatever exists
    now, and whatever each step creates, is moved into regions, one per
    parameter, unless its state is smaller than min_bytes (biases: keeping
    them plain saves a device granule each). bucket_bytes bounds the device
    bytes one bucket of step() holds (default: half the device budget).
    Call it before creating LR schedulers (they wrap optimizer.step).
    Between steps the state tensors must not be touched: use
    optimizer.state_dict(), which returns copies.
    """
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise bad_type("optimizer", optimizer, "torch.optim.Optimizer")
    if isinstance(optimizer, torch.optim.LBFGS):
        raise UmValueError(-errno.EINVAL, "offload_optimizer",
                           "LBFGS updates all parameters at once")
    if not isinstance(ctx, Context):
        raise bad_type("ctx", ctx, "umtorch.Context")
    ctx._ctx("offload_optimizer")
    if "step" in optimizer.__dict__:
        raise UmError(-errno.EBUSY, "offload_optimizer",
                      "optimizer.step is already wrapped (offloaded twice, "
                      "or an LR scheduler created first)")
    if bucket_bytes is not None:
        bucket_bytes = parse_size(bucket_bytes, "bucket_bytes")
    return OptimizerOffload(optimizer, ctx, parse_size(min_bytes,
                            "min_bytes"), bucket_bytes, priority, name)
