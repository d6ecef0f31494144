# SPDX-License-Identifier: MIT
"""Optimizer state in libum regions: offload_optimizer().

Each parameter's state tensors of the parameter's own shape (Adam's
exp_avg and exp_avg_sq, SGD's momentum_buffer, ...) live in a region of
kind optimizer_state: one region per parameter, or one shared by several
small parameters (packed up to a device granule). optimizer.state[p] is a
ParamState (state.py): its region tensors exist only inside a step.

step() runs in buckets whose regions fit bucket_bytes: the optimizer's own
step is called once per bucket of parameters (the param groups narrowed to
that bucket) with that bucket's regions acquired, while the next bucket's
are acquired ahead (restored during this bucket's math) and the previous
one's are evicted behind it. On the sim backend an acquire returns once
its bytes are there (the calling thread is the sim's stream), so there the
acquires ahead are made on a thread of their own (_ahead_pool()). Exact
for every optimizer whose update is per parameter (Adam, AdamW, SGD,
RMSprop, Adagrad...); LBFGS is refused.

Within budget at every instant: state that does not exist yet is made by
the optimizer's own first step one bucket at a time, in regions allocated
and acquired for it beforehand: while that step runs, _InPlace hands the
tensors its init makes from a parameter (zeros_like, full_like, SGD's
clone, ...) region memory, in the strides torch would give them. State
made some other way is moved into regions after the step; state a step
that raised made stays plain until the next step moves it in.
load_state_dict() copies the loaded state straight into regions, bucket
by bucket. A Ctrl-C during a step stops it at the next bucket boundary
with every region released (interrupts.py).
"""

import collections
import concurrent.futures
import contextlib
import copy
import copyreg
import errno
import inspect
import math
import os
import time
import warnings
import weakref

import torch
from torch.overrides import TorchFunctionMode

from . import dtensors, interrupts, views
from .context import Context, _timeout_ns
from .errors import UmError, UmValueError, bad_type, parse_size
from .state import GRANULE, ParamState, _Slot

ALIGN = 256		# each state tensor starts on this boundary
_INSTALLED = ("step", "state_dict", "load_state_dict", "__deepcopy__",
              "__reduce_ex__")
# torch raises "<name> does not support sparse gradients" for the others.
_SPARSE_OK = (torch.optim.SGD, torch.optim.Adagrad, torch.optim.SparseAdam)


def _round(n, to):
    return (n + to - 1) // to * to


def _granules(n):
    return _round(n, GRANULE)


def _nbytes(tensor):
    """Bytes of tensor on this rank (a DTensor's local shard)."""
    tensor = dtensors.local(tensor)
    return tensor.numel() * tensor.element_size()


def _within(tensor, ranges):
    """Whether tensor's bytes (its local shard's) start in one of ranges
    [(lo, hi)]."""
    ptr = dtensors.local(tensor).data_ptr()
    return any(lo <= ptr < hi for lo, hi in ranges)


def _over(value, ranges):
    """Whether value is a strided tensor with elements whose bytes lie in
    one of ranges: state an init wrote into a region."""
    return torch.is_tensor(value) and value.layout == torch.strided and \
        bool(value.numel()) and _within(value, ranges)


def _ranges(made):
    """[(lo, hi)] of the regions of made [(region, params)]."""
    return [(r.ptr, r.ptr + r.nbytes) for r, _ in made]


def _state_tensors(optimizer):
    """Parameter-sized state tensors one parameter will have, at most:
    the estimate used before the state exists."""
    groups = optimizer.param_groups

    def any_group(key):
        return any(g.get(key) for g in groups)
    if isinstance(optimizer, (torch.optim.Adam, torch.optim.AdamW)):
        return 3 if any_group("amsgrad") else 2
    if isinstance(optimizer, torch.optim.SGD):
        return 1 if any_group("momentum") else 0
    if isinstance(optimizer, torch.optim.RMSprop):
        return 1 + any_group("momentum") + any_group("centered")
    one = tuple(getattr(torch.optim, n) for n in ("Adagrad", "Adafactor",
                                                  "Muon")
                if hasattr(torch.optim, n))
    if isinstance(optimizer, one):	# Adafactor: a 1-D one's variance
        return 1
    return 2


class _Space:
    """Where one parameter's new state goes: cap bytes of region at
    offset, handed out tensor by tensor."""

    def __init__(self, region, offset, cap, param):
        self.region, self.offset, self.cap = region, offset, cap
        self.param, self.used, self.made = param, 0, []

    def take(self, dtype, shape, stride=None, like=None):
        """A tensor of the space (a DTensor where like, the spec of the
        one it is made like, says so), or None where it is full."""
        n = _round(views.nbytes(dtype, shape), ALIGN)
        if self.used + n > self.cap:
            return None		# more than estimated: made plain
        t = dtensors.wrap(views.make(self.region, dtype, shape,
                                     self.offset + self.used, stride), like)
        self.used += n
        self.made.append(t)
        return t

    def empty(self):
        for t in self.made:
            views.empty(t)
        self.made = []


_LIKE = {torch.zeros_like: 0, torch.ones_like: 1, torch.full_like: None,
         torch.empty_like: 0}


def _like_stride(src, kwargs):
    """The strides of what torch.*_like(src, **kwargs) (or a clone) makes,
    where that is a strided tensor on src's device that a region can hold
    (channels_last stays channels_last, as torch keeps it); else None."""
    if kwargs.get("device") not in (None, src.device) or \
            kwargs.get("layout") not in (None, torch.strided) or \
            kwargs.get("requires_grad") or kwargs.get("pin_memory") or \
            src.layout != torch.strided:
        return None
    fmt = kwargs.get("memory_format", torch.preserve_format)
    return torch.empty_like(src, device="meta", memory_format=fmt).stride()


class _InPlace(TorchFunctionMode):
    """Inside a step that creates state: the tensors the optimizer's init
    makes from a new parameter (or its gradient) come from that
    parameter's _Space instead of torch's allocator: zeros_like,
    ones_like, full_like, empty_like; x.new().resize_as_(grad) (Rprop's
    step_size); clone(d_p) for SGD's momentum buffers (spaces in clones,
    in the order SGD makes them). Anything else, or more than the space
    holds, is torch's own."""

    def __init__(self, spaces, clones):
        super().__init__()
        self.spaces, self.clones = spaces, list(clones)
        self.inside = False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not self.inside:
            self.inside = True
            try:
                out = self._made(func, args, kwargs)
            finally:
                self.inside = False
            if out is not None:
                return out
        return func(*args, **kwargs)

    def _made(self, func, args, kwargs):
        if func in _LIKE and args and torch.is_tensor(args[0]):
            src = args[0]
            space, shard = self.spaces.get(id(src)), dtensors.local(src)
            stride = None if space is None else _like_stride(shard, kwargs)
            if stride is None:
                return None
            value = _LIKE[func]
            if value is None:
                value = args[1] if len(args) > 1 else kwargs["fill_value"]
            t = space.take(kwargs.get("dtype") or src.dtype, shard.shape,
                           stride, dtensors.spec(src))
            if t is not None:
                t.fill_(value)
            return t
        if func is torch.Tensor.resize_as_ and len(args) == 2:
            fresh, like = args
            space = self.spaces.get(id(like))
            # resize_as_ lays out contiguously whatever like's strides
            if space is None or fresh.numel() or fresh._base is not None \
                    or kwargs or dtensors.is_dtensor(like):
                return None
            t = space.take(fresh.dtype, like.shape)
            if t is not None:
                fresh.set_(t)
                space.made.append(fresh)
                return fresh
            return None
        if func in (torch.clone, torch.Tensor.clone) and self.clones:
            src, space = args[0], self.clones[0]
            if src.shape != space.param.shape or src.is_sparse:
                return None
            shard = dtensors.local(src)
            stride = _like_stride(shard, kwargs)
            if stride is None:
                return None
            self.clones.pop(0)
            t = space.take(src.dtype, shard.shape, stride,
                           dtensors.spec(src))
            if t is not None:
                t.copy_(src)
            return t
        return None


_AHEAD = {"pid": None, "pool": None}


def _ahead_pool():
    """The one thread that makes acquires ahead on sim, for every offload
    of this process (made again in a forked child, which has no thread).
    Idle between steps; nothing waits on it at exit."""
    if _AHEAD["pid"] != os.getpid():
        _AHEAD["pool"] = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="umtorch-ahead")
        _AHEAD["pid"] = os.getpid()
    return _AHEAD["pool"]


class _Bucket:
    def __init__(self):
        self.params, self.slots, self.new = [], [], []
        self.cost = self.new_cost = 0
        self.packed = 0		# estimated bytes of new small state


class OptimizerOffload:
    """The offload of one optimizer's state; see offload_optimizer()."""

    def __init__(self, optimizer, ctx, pack_below, bucket_bytes, priority,
                 name, param_names, overlap, timeout=60.0,
                 per_parameter=None):
        self.optimizer, self.ctx = optimizer, ctx
        self.overlap = overlap
        self.timeout = timeout
        self.per_parameter = _per_parameter(optimizer) \
            if per_parameter is None else per_parameter
        self.pack_below, self.priority, self.name = pack_below, priority, name
        self._bucket_bytes = bucket_bytes
        self._param_names = param_names
        self._per_param = _state_tensors(optimizer)
        self._slots = []
        self._ahead = []		# slots acquired before their bucket
        self._pending = {}		# id(slot): its acquire on _ahead_pool()
        self._warming = []		# restores started by backward
        self._reverse = False		# this step runs the buckets backwards
        self._to_adopt = []		# plain state a failed step left
        self.timing = None		# a Counter: where step() spends time
        self._hooks = []
        self._saved = {n: optimizer.__dict__[n] for n in _INSTALLED
                       if n in optimizer.__dict__}
        self._step = _own_step(optimizer)
        self._load = type(optimizer).load_state_dict.__get__(optimizer)
        self._sd = type(optimizer).state_dict.__get__(optimizer)
        self.steps = 0
        self.stepping = False		# inside step(): state must be live
        self.peak_device = 0		# device bytes, plain state included
        self.peak_plain = 0		# plain state bytes being moved in
        self.attached = True
        self._check_fits_budget()
        optimizer.step = _counting_step(self)
        optimizer.state_dict = self.state_dict
        optimizer.load_state_dict = self.load_state_dict
        optimizer.__deepcopy__ = self._deepcopy
        optimizer.__reduce_ex__ = self._reduce_ex
        ctx._offloads.add(self)
        self._armed = True
        hook = _grad_hook(weakref.ref(self))
        for p in self._params():
            if p.requires_grad and overlap:
                self._hooks.append(p.register_hook(hook))
        try:
            for bucket in self._buckets():	# state that exists already
                self._adopt(bucket.params)
        except BaseException:
            self.detach()
            raise

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

    def _pname(self, p, index):
        return self._param_names.get(id(p)) or "p%d" % index

    def _estimate(self, p):
        """Device bytes p's state will take once it exists."""
        return self._per_param * _round(_nbytes(p), ALIGN)

    def _check_fits_budget(self):
        """Refuse now what step() could never do: a parameter whose state
        needs more than a bucket may hold (the device budget, or the
        bucket_bytes given)."""
        limit = self._new_limit()
        if not self.per_parameter:
            total = sum(b.cost for b in self._buckets())
            if total > self.ctx.budget():
                raise UmError(-errno.ENOMEM, "offload_optimizer",
                              _whole_message(self.optimizer, total,
                                             self.ctx.budget()))
        for index, p in enumerate(self._params()):
            need = _granules(self._estimate(p))
            if need > limit:
                raise UmError(-errno.ENOMEM, "offload_optimizer",
                              "the state of %s (%d bytes on the device) "
                              "exceeds the %d bytes one bucket may hold "
                              "(%s)" % (
                                  self._pname(p, index), need, limit,
                                  "bucket_bytes" if self._bucket_bytes
                                  is not None else "the device budget"))

    def _offloadable(self, param, state):
        return [k for k, v in state.items() if torch.is_tensor(v)
                and v.layout == torch.strided and v.shape == param.shape
                and v.numel() > 1]

    def _adopt(self, params):
        """Move the plain state of params into regions (packing those
        under pack_below into shared ones)."""
        pending, packed = [], 0
        index_of = {id(p): i for i, p in enumerate(self._params())}
        for p in params:
            state = self.optimizer.state.get(p)
            if not state or isinstance(state, ParamState):
                continue
            keys = self._offloadable(p, state)
            if not keys:
                continue
            size = sum(_round(_nbytes(state[k]), ALIGN) for k in keys)
            entry = (p, index_of[id(p)], state, keys, size)
            if size >= self.pack_below:
                self._make_slot([entry])
                continue
            if packed + size > GRANULE and pending:
                self._make_slot(pending)
                pending, packed = [], 0
            pending.append(entry)
            packed += size
        if pending:
            self._make_slot(pending)

    def _make_slot(self, entries, cast=False):
        """One region for entries [(param, index, source state, keys,
        bytes)], filled from the sources; optimizer.state takes the
        ParamStates."""
        device = self.ctx.tensor_device()
        first, index = entries[0][0], entries[0][1]
        name = "%s.%s" % (self.name, self._pname(first, index))
        if len(entries) > 1:
            name += "+%d" % (len(entries) - 1)
        total = sum(e[4] for e in entries)
        region = self.ctx.alloc(total, "optimizer_state", name[:63],
                                self.priority)
        slot, made, offset = _Slot(region), [], 0
        try:
            with self._held([slot]):
                for p, _, state, keys, _ in entries:
                    layout, plain = {}, {}
                    for k, v in state.items():
                        if k not in keys:
                            plain[k] = _cast(p, v, k) if cast else v
                            continue
                        if not cast and str(v.device) != device:
                            raise UmValueError(
                                -errno.EINVAL, "offload_optimizer",
                                "state on %s, but %s backend views are "
                                "on %s" % (v.device, self.ctx.backend,
                                           device))
                        dtype = p.dtype if cast and \
                            p.is_floating_point() else v.dtype
                        shard = dtensors.local(v)
                        stride = views.layout_of(shard)
                        layout[k] = (offset, dtype, tuple(shard.shape),
                                     stride, dtensors.spec(v))
                        view = views.make(region, dtype, shard.shape, offset,
                                          stride)
                        view.copy_(shard)
                        views.empty(view)
                        offset += _round(views.nbytes(dtype, shard.shape),
                                         ALIGN)
                    made.append((p, ParamState(self, slot, layout, plain,
                                               list(state))))
        except BaseException:
            region.free()
            raise
        for p, ps in made:
            self.optimizer.state[p] = ps
            slot.states.append(ps)
        self._slots.append(slot)
        return slot

    # ---- buckets --------------------------------------------------------

    @property
    def bucket_bytes(self):
        """Device bytes one bucket may hold: the given value, else half the
        budget (the other half is the next bucket, restored meanwhile)."""
        if self._bucket_bytes is not None:
            return self._bucket_bytes
        return self.ctx.budget() // 2

    def _new_limit(self):
        """The most one parameter's state may take: new state is made in
        its regions, so a bucket of one parameter may use the whole
        budget (or the bucket_bytes given)."""
        if self._bucket_bytes is not None:
            return min(self._bucket_bytes, self.ctx.budget())
        return self.ctx.budget()

    def _small(self, p):
        """Whether p's state is (or will be) packed with others'."""
        state = self.optimizer.state.get(p)
        if isinstance(state, ParamState):
            return len(state._slot.states) > 1 or \
                state._slot.region.nbytes < self.pack_below
        return self._estimate(p) < self.pack_below

    def _buckets(self, grads_only=False):
        """Parameters split so each bucket's regions (and the estimate of
        state still to be created) fit: the big ones in order, then the
        small ones, so new small state packs into few regions."""
        params = self._params()
        small = [p for p in params if self._small(p)]
        big = [p for p in params if not self._small(p)]
        out, cur = [], _Bucket()
        limit = self.bucket_bytes if self.per_parameter else math.inf
        for p in big + small:
            state = self.optimizer.state.get(p)
            slot = state._slot if isinstance(state, ParamState) else None
            new = not state and self._per_param > 0 and \
                (p.grad is not None or not grads_only)
            cost = 0
            if new:			# packed: the granules the pack grows by
                est = self._estimate(p)
                cost = _granules(est) if est >= self.pack_below else \
                    _granules(cur.packed + est) - _granules(cur.packed)
            if slot is not None and slot not in cur.slots:
                cost = slot.cost
            if cur.params and cur.cost + cost > limit:
                out.append(cur)
                cur = _Bucket()
                if new and est < self.pack_below:
                    cost = _granules(est)
            cur.params.append(p)
            cur.cost += cost
            if slot is not None and slot not in cur.slots:
                # a packed region split between buckets is held by each
                cur.slots.append(slot)
            if new:
                cur.new.append(p)
                cur.new_cost += cost
                if est < self.pack_below:
                    cur.packed += est
        return out + [cur] if cur.params else out

    # ---- residency ------------------------------------------------------

    def _stream(self):
        if self.ctx.backend != "cuda":
            return None
        return torch.cuda.current_stream().cuda_stream

    def _settle(self, slot):
        """Wait for slot's acquire on the ahead thread, if it had one;
        raises what that acquire raised (slot then is not acquired). If
        the wait itself is cut short (an exception raised in this thread
        meanwhile), the acquire is released once it is done."""
        fut = self._pending.pop(id(slot), None)
        if fut is None:
            return
        try:
            fut.result()
        except UmError:
            raise
        except BaseException:
            fut.add_done_callback(_release_if_acquired(slot.region))
            raise

    def _acquire_one(self, region, stream):
        """Acquire for a step or a read: waits up to the offload's timeout
        for room that other threads' releases make (two threads stepping
        optimizers on one Context take turns)."""
        region.acquire(stream=stream, timeout=self.timeout)

    def _acquire(self, slots):
        """Start restoring slots (not already acquired ahead); on failure
        none of them stays acquired."""
        stream, done = self._stream(), []
        try:
            for slot in slots:
                ahead = slot in self._ahead
                if ahead:
                    self._ahead.remove(slot)
                    try:
                        self._settle(slot)
                    except UmError:	# no room then: wait for it now
                        ahead = False
                if not ahead:
                    self._acquire_one(slot.region, stream)
                done.append(slot)
        except BaseException:
            for slot in reversed(done):
                slot.region.release()
            raise

    @contextlib.contextmanager
    def _held(self, slots):
        """Acquire the regions of slots (and wait for their bytes) for the
        with block. Regions larger than the budget (lowered since they
        were made) are reachable only on the device: the budget is raised
        to their size for the block, and they are evicted before it is
        set back, so that their state can always be read out."""
        with interrupts.held(), self._holding(slots):
            yield

    @contextlib.contextmanager
    def _holding(self, slots):
        held, stream = [], self._stream()
        need = sum(s.cost for s in slots)
        budget = self.ctx.budget()
        raised = need > budget
        if raised:
            self.ctx.set_budget(need)
        try:
            for slot in slots:
                self._acquire_one(slot.region, stream)
                held.append(slot)
            for slot in held:
                slot.region.wait()
            yield
        finally:
            for slot in reversed(held):
                slot.region.release()
            if raised:
                for slot in held:
                    slot.region.evict("host")
                self.ctx.wait_all()
                try:
                    self.ctx.set_budget(budget)
                except UmError as e:	# set; met as regions release
                    if e.rc != -errno.EBUSY:
                        raise

    def _prefetch(self, slots, room):
        """Acquire slots ahead of their bucket if they fit room."""
        if not self.overlap or sum(s.cost for s in slots) > room:
            return
        stream = self._stream()
        for slot in slots:
            if slot in self._ahead:
                continue
            if self.ctx.backend == "cuda":	# only if there is room now
                if not self.ctx._try_acquire(slot.region, stream):
                    continue
            else:
                self._pending[id(slot)] = _ahead_pool().submit(
                    _acquire_ahead, slot.region)
            self._ahead.append(slot)

    def _on_grad(self, grad):
        """The first gradient of a backward pass: start restoring the first
        bucket's state while the rest of backward runs. The regions are
        acquired and released again at once (warmed, not held): a backward
        that no step follows (an eval pass, a skipped step, an idle
        optimizer over the same parameters) leaves nothing acquired, and
        libum may evict them again if another needs the room."""
        if self._armed and self.attached and not self.ctx.closed:
            self._armed = False
            buckets = self._ordered(self._buckets(grads_only=True))
            if buckets and not buckets[0].new:
                self._warm(buckets[0].slots)
        return None

    def _warm(self, slots):
        if sum(s.cost for s in slots) > self.ctx.budget():
            return
        if self.ctx.backend == "cuda":
            stream = self._stream()
            for slot in slots:
                if self.ctx._try_acquire(slot.region, stream):
                    slot.region.release()
            return
        self._warming.append(_ahead_pool().submit(
            _warm_regions, [s.region for s in slots]))

    def _evict(self, region):
        """Evict behind a bucket. On sim the eviction's copy is made by
        the calling thread, so there it is made on the ahead thread,
        beside the next bucket's math (and, after the last, the next
        forward pass); the acquires ahead queued behind it find its room."""
        if self.ctx.backend == "cuda":
            region.evict("host")
        else:
            self._warming.append(_ahead_pool().submit(_evict_quietly,
                                                      region))

    def _settle_warm(self):
        """Wait for the restores backward started and the evictions behind
        the last step (their failures only mean a later acquire does the
        copy)."""
        warming, self._warming = self._warming, []
        for fut in warming:
            fut.result()

    def _drop_ahead(self):
        ahead, self._ahead = self._ahead, []
        for slot in ahead:
            try:
                self._settle(slot)
            except Exception:	# never acquired: nothing to release
                continue
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

    # ---- checks before any bucket -----------------------------------------

    def _validate(self, buckets, budget):
        """What would make a bucket raise after others were updated,
        raised before any is: torch's own error where torch has one."""
        opt = self.optimizer
        if not isinstance(opt, _SPARSE_OK):
            for p in self._params():
                if p.grad is not None and p.grad.is_sparse:
                    raise _sparse_refusal(opt)
        for b in buckets:
            if b.cost > budget and not self.per_parameter:
                raise UmError(-errno.ENOMEM, "step", _whole_message(
                    self.optimizer, b.cost, budget))
            if b.cost > budget:
                names = ", ".join(self._pname(p, self._index_of[id(p)])
                                  for p in b.params[:4])
                raise UmError(-errno.ENOMEM, "step",
                              "the state of %s%s needs %d device bytes, "
                              "the budget is %d" % (
                                  names, " ..." if len(b.params) > 4
                                  else "", b.cost, budget))

    # ---- the optimizer's methods ----------------------------------------

    def step(self, closure=None):
        """optimizer.step(), bucket by bucket with the state resident. A
        Ctrl-C meanwhile stops it at the next bucket boundary, everything
        released, and is raised then (interrupts.py)."""
        self._live("step")
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        with interrupts.held():
            self._step_buckets()
        return loss

    def _step_buckets(self):
        t0 = time.perf_counter()
        self._settle_warm()
        if self._to_adopt:
            params, self._to_adopt = self._to_adopt, []
            self._adopt(params)
        if self.timing is not None:
            self.timing["wait for restores and evictions before"] += \
                time.perf_counter() - t0
        buckets = self._buckets(grads_only=True)
        self._index_of = {id(p): i for i, p in enumerate(self._params())}
        budget = self.ctx.budget()
        try:
            self._validate(buckets, budget)
        except BaseException:
            self._drop_ahead()
            raise
        # LR schedulers count steps here (ours is their counting wrapper,
        # whether they were made before or after the offload).
        self.optimizer._step_count = getattr(self.optimizer, "_step_count",
                                             0) + 1
        self.optimizer._opt_called = True	# torch 2.x's schedulers
        buckets = self._ordered(buckets)
        kept = self._kept_from(buckets, budget) if self.overlap else 0
        try:
            self.stepping = True
            for i, bucket in enumerate(buckets):
                if interrupts.interrupted():
                    break
                following = buckets[i + 1] if i + 1 < len(buckets) else None
                self._run_bucket(bucket, following, i < kept,
                                 len(buckets) > 1, budget)
        finally:
            self.stepping = False
            self._drop_ahead()
            self._armed = True
        if len(buckets) > 1:
            self._reverse = not self._reverse
        if self.timing is not None:
            self.timing["step"] += time.perf_counter() - t0
            self.timing["steps"] += 1
        self.steps += 1
        self.ctx._history_step(self)

    def _kept_from(self, buckets, budget):
        """The index of the first of the trailing buckets that together fit
        the budget: those stay on the device after the step (the next one,
        run the other way, starts with them) and the ones before them are
        evicted behind their math. Each bucket kept is one restore and one
        eviction fewer per step; the last one always stays."""
        room, kept = budget, len(buckets)
        while kept > 0 and buckets[kept - 1].cost <= room:
            room -= buckets[kept - 1].cost
            kept -= 1
        return kept

    def _ordered(self, buckets):
        """Every other step runs the buckets last to first, so a step
        starts with the buckets the one before ended with, still on the
        device (a cyclic order would find each evicted): the same bits,
        each parameter's update being its own, and a bucket's restore and
        eviction fewer each step."""
        if self._reverse and self.per_parameter and \
                not any(b.new for b in buckets):
            return buckets[::-1]
        return buckets

    def _run_bucket(self, bucket, following, evict_behind, narrow, budget):
        clock = self.timing is not None and time.perf_counter
        t0 = clock and clock()
        self._acquire(bucket.slots)
        try:
            if following is not None and not following.new \
                    and not bucket.new:
                self._prefetch(following.slots, budget - bucket.cost)
            for slot in bucket.slots:
                slot.region.wait()
            t1 = clock and clock()
            for slot in bucket.slots:
                for ps in slot.states:
                    ps._bind()
            with self._only(bucket.params) if narrow \
                    else contextlib.nullcontext():
                t2 = clock and clock()
                if bucket.new:
                    self._step_creating(bucket.new)
                else:
                    self._step()
                t3 = clock and clock()
        finally:
            for slot in bucket.slots:
                for ps in slot.states:
                    ps._unbind()
            for slot in bucket.slots:
                slot.region.release()
                if evict_behind and slot not in self._ahead:
                    self._evict(slot.region)
        if clock:
            t = self.timing
            t["acquire and wait"] += t1 - t0
            t["bind, unbind, release, evict"] += (t2 - t1) + (clock() - t3)
            t["optimizer math"] += t3 - t2
            t["buckets"] += 1

    # ---- new state, made in its regions --------------------------------

    def _plan(self, params):
        """Regions for the new state of params, as _buckets() counted
        them: [(bytes, [(param, bytes)])], each big one alone, the small
        ones packed into one."""
        out, pack = [], []
        for p in params:
            size = self._estimate(p)
            if not size:	# no elements: state stays plain, as _adopt's
                continue
            if size >= self.pack_below:
                out.append((size, [(p, size)]))
            else:
                pack.append((p, size))
        if pack:
            out.append((sum(n for _, n in pack), pack))
        return out

    def _step_creating(self, new):
        """The optimizer's own step for a bucket whose params in new have
        no state yet: the tensors its init makes from a parameter
        (zeros_like, full_like, ...; SGD's momentum clone) are made in
        regions allocated for them beforehand (_InPlace), so the state
        never exists plain on the device. State the init made otherwise
        is moved into regions after the step."""
        index_of = self._index_of
        made, spaces, stream = [], {}, self._stream()
        try:
            for size, members in self._plan(new):
                first = members[0][0]
                name = "%s.%s" % (self.name, self._pname(
                    first, index_of[id(first)]))
                if len(members) > 1:
                    name += "+%d" % (len(members) - 1)
                region = self.ctx.alloc(size, "optimizer_state", name[:63],
                                        self.priority)
                try:
                    self._acquire_one(region, stream)
                except BaseException:
                    region.free()
                    raise
                made.append((region, [p for p, _ in members]))
                offset = 0
                for p, cap in members:
                    space = _Space(region, offset, cap, p)
                    spaces[id(p)] = space
                    if p.grad is not None:
                        spaces[id(p.grad)] = space
                    offset += cap
            for region, _ in made:
                region.wait()
            mode = _InPlace(spaces, self._clone_order(new, spaces))
            with mode:
                self._step()
            self._note_plain(new, made)
            self._install(made, index_of)
        except BaseException:
            self._keep_plain(new, made)
            raise
        finally:
            for region, _ in made:
                if not region.freed:
                    region.release()
            for space in set(spaces.values()):
                space.empty()
        for region, _ in made:
            if not region.freed and not any(
                    s.region is region for s in self._slots):
                region.free()

    def _keep_plain(self, params, made):
        """The step that made params' state raised: the state it made stays
        (as plain torch keeps it), as plain copies of the tensors over the
        regions about to be emptied and freed; the next step moves it into
        regions of its own (_adopt)."""
        ranges = _ranges(made)
        for p in params:
            state = self.optimizer.state.get(p)
            if not state or isinstance(state, ParamState):
                continue
            for k, v in list(state.items()):
                if _over(v, ranges):
                    state[k] = v.clone()
            self._to_adopt.append(p)

    def _clone_order(self, new, spaces):
        """SGD makes a momentum buffer as clone(d_p), parameter by
        parameter in group order: the spaces those clones go to."""
        if not isinstance(self.optimizer, torch.optim.SGD):
            return []
        # a parameter of no elements has no space: its clone, of another
        # shape than the next space's, is made plainly
        ids = set(map(id, new))
        return [spaces[id(p)] for g in self.optimizer.param_groups
                if g.get("momentum", 0) != 0 for p in g["params"]
                if id(p) in ids and p.grad is not None and id(p) in spaces]

    def _install(self, made, index_of):
        """ParamStates over the regions the step's init wrote into; a
        region whose state is not all in it is replaced by one made from
        the state as it is (then freed, by the caller)."""
        for region, params in made:
            lo, hi = region.ptr, region.ptr + region.nbytes
            slot, moved, entries = _Slot(region), False, []
            states = []
            for p in params:
                state = self.optimizer.state.get(p)
                if not state or isinstance(state, ParamState):
                    continue
                keys = self._offloadable(p, state)
                layout, plain = {}, {}
                for k, v in list(state.items()):
                    here = _over(v, [(lo, hi)])
                    shard = dtensors.local(v)
                    if k in keys and here and \
                            shard.stride() == views.layout_of(shard):
                        layout[k] = (shard.data_ptr() - lo, v.dtype,
                                     tuple(shard.shape), shard.stride(),
                                     dtensors.spec(v))
                    elif k in keys:
                        moved = True
                    else:		# a scalar, say: never over the region
                        state[k] = plain[k] = v.clone() if here else v
                if not keys:		# nothing for a region: stays plain
                    continue
                size = sum(_round(_nbytes(state[k]), ALIGN) for k in keys)
                entries.append((p, index_of[id(p)], state, keys, size))
                states.append((p, state, layout, plain))
            if not entries:
                continue
            # less made than estimated: a region the size of the state,
            # where one fits beside this one for the copy
            smaller = _granules(sum(e[4] for e in entries)) < \
                _granules(region.nbytes)
            if moved or smaller:	# copied out of this region while held
                try:
                    self._make_slot(entries)
                    continue
                except UmError as e:
                    if moved or e.rc not in (-errno.ENOMEM, -errno.EDEADLK,
                                             -errno.ETIMEDOUT):
                        raise
            for p, state, layout, plain in states:
                for k in layout:
                    views.empty(state[k])
                ps = ParamState(self, slot, layout, plain, list(state))
                self.optimizer.state[p] = ps
                slot.states.append(ps)
            self._slots.append(slot)

    def _note_plain(self, params, made=()):
        """Record the device bytes while new state is still plain (made
        by an init _InPlace did not catch, not in the regions of made).
        Only parameter-shaped tensors count: scalars such as Adam's 'step'
        stay plain for good (on the CPU in torch's default mode)."""
        ranges = _ranges(made)
        plain = 0
        for p in params:
            state = self.optimizer.state.get(p, {})
            for k in self._offloadable(p, state):
                if not _within(state[k], ranges):
                    plain += _nbytes(state[k])
        device = self.ctx.device_bytes()
        self.peak_plain = max(self.peak_plain, plain)
        self.peak_device = max(self.peak_device, device + plain)

    def state_dict(self):
        """optimizer.state_dict() with plain copies of the offloaded state
        (on the CPU: a checkpoint never needs the whole state on the
        device), one region at a time."""
        self._live("state_dict")
        post = "_optimizer_state_dict_post_hooks"
        with _hooks_off(self.optimizer, post):
            sd = self._sd()
        for index, state in list(sd["state"].items()):
            if isinstance(state, ParamState):
                sd["state"][index] = state.to_dict(device="cpu")
        # torch 2.x's post hooks, as its state_dict runs them, on the
        # plain dict they would see without the offload
        for hook in _hooks(self.optimizer, post):
            sd = hook(self.optimizer, sd) or sd
        return sd

    def load_state_dict(self, state_dict):
        """optimizer.load_state_dict(): param groups as torch loads them,
        then the state copied straight into regions, bucket by bucket
        (torch would first copy all of it onto the parameters' device)."""
        self._live("load_state_dict")
        if not isinstance(state_dict, dict) or "state" not in state_dict:
            raise bad_type("state_dict", state_dict,
                           "an optimizer state_dict")
        # torch 2.x's hooks, as its load_state_dict runs them: the pre
        # hooks on (a shallow copy of) the whole dict, the post hooks once
        # the state is in
        state_dict = state_dict.copy()
        pre = "_optimizer_load_state_dict_pre_hooks"
        post = "_optimizer_load_state_dict_post_hooks"
        for hook in _hooks(self.optimizer, pre):
            state_dict = hook(self.optimizer, state_dict) or state_dict
        self._settle_warm()
        self._drop_ahead()
        with _hooks_off(self.optimizer, pre), \
                _hooks_off(self.optimizer, post):
            self._load(dict(state_dict, state={}))	# checks the groups
        self._free_slots()
        saved = [i for g in state_dict["param_groups"] for i in g["params"]]
        params = [p for g in self.optimizer.param_groups
                  for p in g["params"]]
        by_param = {p: state_dict["state"][i]
                    for i, p in zip(saved, params) if i in
                    state_dict["state"]}
        for index, p in enumerate(self._params()):
            if p in by_param:
                self._load_one(p, index, by_param[p])
        known = set(saved)
        for k, v in state_dict["state"].items():	# as torch keeps it
            if k not in known:
                self.optimizer.state[k] = copy.deepcopy(v)
        # The optimizer's own conversion of what it loads (Adam's makes
        # a numeric 'step' a tensor), as torch's load_state_dict runs it.
        type(self.optimizer).__setstate__(self.optimizer, {
            "state": self.optimizer.state,
            "param_groups": self.optimizer.param_groups})
        for hook in _hooks(self.optimizer, post):
            hook(self.optimizer)

    def _load_one(self, p, index, saved):
        keys = self._offloadable(p, saved)
        size = sum(_round(views.nbytes(p.dtype if p.is_floating_point()
                                       else saved[k].dtype,
                                       dtensors.local(saved[k]).shape), ALIGN)
                   for k in keys)
        if keys:
            self._make_slot([(p, index, saved, keys, size)], cast=True)
        else:
            self.optimizer.state[p] = {k: _cast(p, v, k)
                                       for k, v in saved.items()}

    # ---- copies ---------------------------------------------------------

    def _plain_dict(self, memo=None):
        """The optimizer's __dict__ as a plain optimizer's: state as plain
        copies, everything deep-copied when memo is given (deepcopy)."""
        def dup(v):
            return v if memo is None else copy.deepcopy(v, memo)
        out = {}
        # what the class pickles (torch 2.x: not the hooks, as a plain
        # optimizer's deepcopy has none)
        kept = type(self.optimizer).__getstate__(self.optimizer)
        for k, v in kept.items():
            if k in _INSTALLED:
                continue
            if k == "state":
                state = collections.defaultdict(dict)
                for p, s in v.items():
                    s = s.to_dict() if isinstance(s, ParamState) else s
                    state[dup(p)] = dup(s)
                out[k] = state
            else:
                out[k] = dup(v)
        return out

    def _deepcopy(self, memo):
        """copy.deepcopy(optimizer): a plain optimizer with copies of the
        state (not offloaded: it has no context)."""
        self._live("deepcopy")
        opt = self.optimizer
        new = type(opt).__new__(type(opt))
        memo[id(opt)] = new
        new.__setstate__(self._plain_dict(memo))
        return new

    def _reduce_ex(self, protocol):
        """pickle/torch.save(optimizer): saved as the plain optimizer."""
        self._live("pickle")
        return (copyreg.__newobj__, (type(self.optimizer),),
                self._plain_dict())

    # ---- teardown -----------------------------------------------------

    def _free_slots(self):
        for slot in self._slots:
            for ps in slot.states:
                ps._unbind()
            if not slot.region.freed:
                slot.region.free()
        self._slots = []

    def detach(self):
        """Give the optimizer plain copies of its state, free the regions
        and restore its methods. Idempotent; Context.close() calls it."""
        if not getattr(self, "attached", False):
            return
        self.attached = False
        for h in self._hooks:
            h.remove()
        self._hooks = []
        self._settle_warm()
        if not self.ctx.closed:
            self._drop_ahead()
            for p, state in list(self.optimizer.state.items()):
                if isinstance(state, ParamState):
                    self.optimizer.state[p] = state.to_dict()
        self._free_slots()
        for n in _INSTALLED:
            self.optimizer.__dict__.pop(n, None)
        self.optimizer.__dict__.update(self._saved)
        self.ctx._offloads.discard(self)

    close = detach

    @property
    def regions(self):
        return [s.region for s in self._slots]

    @property
    def nbytes(self):
        """Bytes of state held in regions."""
        return sum(r.nbytes for r in self.regions)

    def __repr__(self):
        return "<umtorch.OptimizerOffload of %s: %d regions, %d bytes%s>" % (
            type(self.optimizer).__name__, len(self._slots), self.nbytes,
            "" if self.attached else ", detached")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.detach()


def _cast(param, value, key=None):
    """A copy of a loaded state value, cast as torch's load_state_dict
    casts it: tensors other than 'step' to the parameter's device (and,
    floating ones, to its dtype); never the caller's own objects (torch
    deep-copies the dict it loads)."""
    if torch.is_tensor(value):
        out = value
        if key != "step":
            if param.is_floating_point():
                out = out.to(param.dtype)
            out = out.to(param.device)
        return copy.deepcopy(value) if out is value else out
    if isinstance(value, dict):
        return {k: _cast(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(param, v) for v in value)
    return copy.deepcopy(value)


# torch's optimizers whose step updates each parameter from its own
# gradient and state alone: bucket by bucket is their unbucketed step.
_PER_PARAMETER = tuple(getattr(torch.optim, n) for n in (
    "SGD", "Adam", "AdamW", "Adagrad", "Adadelta", "Adamax", "ASGD",
    "NAdam", "RAdam", "RMSprop", "Rprop", "SparseAdam",
    # torch 2.x's: factored second moments and an orthogonalized
    # momentum, each of one parameter's own
    "Adafactor", "Muon")
    if hasattr(torch.optim, n))
# Known to scale every update by a norm over all parameters.
_GLOBAL_NORM = ("FusedLAMB", "DistributedFusedLAMB",
                "FusedMixedPrecisionLamb")


def _unwrapped(fn):
    """A step without the wrappers functools.wraps marks (torch 1.13's
    profiling hook, which it sets on the optimizer's own class)."""
    while hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
    return fn


def _per_parameter(optimizer):
    """Whether optimizer's step is one of _PER_PARAMETER's own (a subclass
    that overrides step is not: what it does is not knowable here)."""
    step = _unwrapped(type(optimizer).step)
    return any(step is _unwrapped(k.step) for k in _PER_PARAMETER)


def _sparse_refusal(optimizer):
    """The error torch's own step raises for a sparse gradient, advice and
    all ("..., please consider SparseAdam instead"), got from a throwaway
    optimizer of the same class and defaults on a one-element parameter."""
    name = type(optimizer).__name__
    probe = torch.zeros(1, requires_grad=True)
    with warnings.catch_warnings():	# 2.x: "invariant checks disabled"
        warnings.simplefilter("ignore")
        probe.grad = torch.sparse_coo_tensor(
            torch.zeros(1, 1, dtype=torch.long), torch.ones(1), (1,))
    takes = inspect.signature(type(optimizer).__init__).parameters
    # defaults its __init__ takes (2.x's AdamW keeps one it does not)
    kwargs = {k: v for k, v in optimizer.defaults.items() if k in takes}
    try:
        type(optimizer)([probe], **kwargs).step()
    except RuntimeError as e:
        if "sparse" in str(e):
            return RuntimeError(str(e))
    except Exception:	# not made from its defaults alone: our own words
        pass
    return RuntimeError("%s does not support sparse gradients" % name)


def _wrapped(optimizer):
    """(attribute, optimizer) of an optimizer optimizer holds (a wrapper
    such as Lookahead, whose step calls its base optimizer's), or None."""
    for attr, value in vars(optimizer).items():
        if isinstance(value, torch.optim.Optimizer) and value is not optimizer:
            return attr, value
    return None


def _whole_message(optimizer, need, budget):
    return ("%s.step is not known to update each parameter on its own "
            "(torch's %s are), so it runs once over all parameters with "
            "their whole state on the device: %d bytes, over the %d-byte "
            "budget; raise the budget, or pass per_parameter=True if its "
            "update is per parameter" % (
                type(optimizer).__name__,
                ", ".join(k.__name__ for k in _PER_PARAMETER), need, budget))


def _own_step(optimizer):
    """The optimizer's step for one bucket, bound: its class's, without the
    wrapper torch 2.x's Optimizer puts around it (marked hooked) to run
    the step hooks, which run once per step around all buckets
    (_counting_step); other wrappers (no_grad) stay."""
    step = type(optimizer).step
    if getattr(step, "hooked", False) and hasattr(step, "__wrapped__"):
        step = step.__wrapped__
    return step.__get__(optimizer)


def _hooks(optimizer, name):
    """The hooks of torch 2.x's optimizer hook dict name (none on 1.13)."""
    return list(getattr(optimizer, name, {}).values())


@contextlib.contextmanager
def _hooks_off(optimizer, name):
    """optimizer's hooks name set aside for the with block (the offload
    runs them itself, where torch would)."""
    saved = optimizer.__dict__.get(name)
    if saved is None:
        yield
        return
    optimizer.__dict__[name] = type(saved)()
    try:
        yield
    finally:
        optimizer.__dict__[name] = saved


def _counting_step(offload):
    """optimizer.step as LR schedulers want it: marked _with_counter, so a
    scheduler made later leaves it alone (offload.step counts) and one
    made earlier sees no override. Wrapped as torch wraps an optimizer's
    step (Optimizer.profile_hook_step: on 2.x, the global and the
    optimizer's own step pre and post hooks, in torch's order, with the
    arguments the caller gave), so they run once a step, not once a
    bucket."""
    def run(_optimizer, *args, **kwargs):
        return offload.step(*args, **kwargs)
    wrap = getattr(type(offload.optimizer), "profile_hook_step", None)
    hooked = wrap(run) if wrap is not None else run

    def step(*args, **kwargs):
        return hooked(offload.optimizer, *args, **kwargs)
    disable = getattr(getattr(torch, "compiler", None), "disable", None)
    if disable is not None:
        # torch.compile of code that steps runs the step itself eagerly
        # (a graph break): libum calls and regions bound for a bucket are
        # nothing a graph can hold
        step = disable(step)
    step._with_counter = True
    step._wrapped_by_lr_sched = True	# torch 2.x's mark
    step._umtorch_offload = True
    step.__doc__ = offload.step.__doc__
    return step


def _warm_regions(regions):
    """On the ahead thread: restore regions onto the device without
    holding them (acquire, release)."""
    for region in regions:
        if region.ctx._try_acquire(region):
            region.release()


def _evict_quietly(region):
    """On the ahead thread: evict region to the host; a region freed or
    acquired again meanwhile stays as it is."""
    try:
        region.evict("host")
    except UmError:
        pass


def _release_if_acquired(region):
    """A done-callback for an acquire ahead nobody waits for any more."""
    def release(fut):
        if fut.exception() is None and not region.freed:
            region.release()
    return release


def _acquire_ahead(region):
    """On the ahead thread: acquire region if there is room now (the
    bucket's own acquire waits for room otherwise)."""
    if not region.ctx._try_acquire(region):
        raise UmError(-errno.ENOMEM, "acquire ahead", region.name)


def _grad_hook(ref):
    """A gradient hook that does not keep the offload alive (parameters
    outlive optimizers)."""
    def hook(grad):
        offload = ref()
        if offload is not None:
            offload._on_grad(grad)
    return hook


def _local_optimizer(optimizer):
    """ZeroRedundancyOptimizer keeps this rank's shard in .optim: that is
    the state to offload."""
    try:
        from torch.distributed.optim import ZeroRedundancyOptimizer
    except ImportError:
        return optimizer
    if isinstance(optimizer, ZeroRedundancyOptimizer):
        return optimizer.optim
    return optimizer


def offload_optimizer(optimizer, ctx, *, min_bytes=64 << 10,
                      bucket_bytes=None, priority=0, name="optim",
                      model=None, overlap=True, timeout=60.0,
                      per_parameter=None):
    """Keep optimizer's state in libum regions of ctx; returns the
    OptimizerOffload (detach() undoes it; so does ctx.close()).

    State appears lazily (Adam makes it in its first step): whatever exists
    now is moved into regions at once; the rest is created by the first
    step, bucket by bucket, within the budget. One region per parameter;
    parameters whose state is under min_bytes share regions (packed up to
    a 2 MiB device granule). bucket_bytes bounds the device bytes one
    bucket of step() holds (default: half the device budget). model (an
    nn.Module) names the regions by parameter name. overlap=False turns
    off acquiring ahead (during backward, and the next bucket during this
    one) and evicting behind, for comparison. For a
    ZeroRedundancyOptimizer, this rank's shard (its .optim) is offloaded.
    timeout: seconds an acquire of a step (or a state read) waits for room
    that other threads' releases make (math.inf: no limit; 0: none).
    per_parameter: whether the optimizer's update is per parameter, so
    that its step may run bucket by bucket; None: only torch's own
    per-parameter optimizers are (see _per_parameter()), any other runs
    one step over all parameters with all the state on the device.
    Between steps, optimizer.state reads give copies whose in-place edits
    reach the regions.
    """
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise bad_type("optimizer", optimizer, "torch.optim.Optimizer")
    optimizer = _local_optimizer(optimizer)
    wrapped = _wrapped(optimizer)
    if wrapped is not None:
        raise UmValueError(
            -errno.EINVAL, "offload_optimizer",
            "%s wraps the optimizer in .%s (a %s): its state is that "
            "optimizer's and its step is called by the wrapper's, so "
            "offload that one, offload_optimizer(optimizer.%s, ctx); "
            "state the wrapper keeps itself stays plain" % (
                type(optimizer).__name__, wrapped[0],
                type(wrapped[1]).__name__, wrapped[0]))
    if isinstance(optimizer, torch.optim.LBFGS):
        raise UmValueError(-errno.EINVAL, "offload_optimizer",
                           "LBFGS updates all parameters at once")
    if not isinstance(ctx, Context):
        raise bad_type("ctx", ctx, "umtorch.Context")
    ctx._ctx("offload_optimizer")
    step = optimizer.__dict__.get("step")
    if getattr(step, "_umtorch_offload", False):
        raise UmError(-errno.EBUSY, "offload_optimizer", "offloaded twice")
    if step is not None and not getattr(step, "_with_counter", False) \
            and not getattr(step, "_wrapped_by_lr_sched", False):
        raise UmError(-errno.EBUSY, "offload_optimizer",
                      "optimizer.step is already wrapped by something "
                      "other than an LR scheduler")
    if bucket_bytes is not None:
        bucket_bytes = parse_size(bucket_bytes, "bucket_bytes")
    names = {}
    if model is not None:
        if not isinstance(model, torch.nn.Module):
            raise bad_type("model", model, "torch.nn.Module")
        names = {id(p): n for n, p in model.named_parameters()}
    _timeout_ns(timeout)		# checked as acquire() checks it
    if per_parameter not in (None, True, False):
        raise bad_type("per_parameter", per_parameter, "None, True or False")
    if per_parameter and type(optimizer).__name__ in _GLOBAL_NORM:
        raise UmValueError(-errno.EINVAL, "offload_optimizer",
                           "%s scales its updates by a norm over all "
                           "parameters: per_parameter=True would compute "
                           "something else" % type(optimizer).__name__)
    return OptimizerOffload(optimizer, ctx, parse_size(min_bytes,
                            "min_bytes"), bucket_bytes, priority, name,
                            names, bool(overlap), timeout, per_parameter)

