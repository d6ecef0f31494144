# SPDX-License-Identifier: MIT
"""ParamState: one parameter's optimizer state, its big tensors in a region.

A region's memory may be touched only while it is acquired, and between
steps it is not: so the tensors over it exist only inside a step ("live",
bound by the offload) and are emptied in place after it. Outside a step,
reading a key acquires the region and returns a copy (a StateCopy: an
in-place edit of it, or of a view of it, is written back into the region
at once), writing one copies into the region; repr(), copy.deepcopy()
and pickling see plain copies. Nothing outside a step ever holds a
pointer into a region.
"""

import collections.abc
import contextlib
import copy

import torch

from . import dtensors, views


class _Link:
    """Ties a StateCopy (and the views made of it) to the key it copies."""

    def __init__(self, state, key, root):
        self.state, self.key, self.root = state, key, root
        self.version = root._version

    def sync(self):
        """Write the copy back if it was changed in place since."""
        if self.root._version == self.version:
            return
        self.version = self.root._version
        state = self.state
        if state._offload.attached and self.key in state._layout and \
                not state._slot.region.freed:
            state[self.key] = self.root.as_subclass(torch.Tensor)

    def __deepcopy__(self, memo):
        return None

    def __reduce__(self):
        return (type(None), ())


class StateCopy(torch.Tensor):
    """A copy of offloaded state, read between steps: a plain tensor for
    reading and computing (results are plain tensors), whose in-place
    edits (add_, zero_, indexing assignment, out=..., through views of
    it too) reach the region right after the edit. Edits torch does not
    see (through .numpy() memory) do not."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        with torch._C.DisableTorchFunction():
            ret = func(*args, **kwargs)
            links = [a._um_link for a in _tensors(args, kwargs)
                     if isinstance(a, StateCopy)
                     and getattr(a, "_um_link", None) is not None]
            for link in links:
                link.sync()
            if links:
                ret = _keep_views(ret, links[0])
        return ret

    def _plain(self):
        with torch._C.DisableTorchFunction():
            return self.as_subclass(torch.Tensor).clone()

    def __deepcopy__(self, memo):		# copies and pickles are plain
        return self._plain()

    def __reduce_ex__(self, protocol):
        return self._plain().__reduce_ex__(protocol)


def _tensors(args, kwargs):
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, (list, tuple)):
            yield from (x for x in a if torch.is_tensor(x))
        elif torch.is_tensor(a):
            yield a


def _keep_views(ret, link):
    """Outputs over the copy's memory stay linked (a view edited in place
    writes back too); the others are plain tensors."""
    if isinstance(ret, (list, tuple)):
        return type(ret)(_keep_views(r, link) for r in ret)
    if not torch.is_tensor(ret) or ret.layout != torch.strided:
        return ret
    root = link.root
    same = ret.numel() and root.numel() and \
        _storage_ptr(ret) == _storage_ptr(root)
    if not same:
        return ret.as_subclass(torch.Tensor) if isinstance(ret, StateCopy) \
            else ret
    if not isinstance(ret, StateCopy) or ret is not root:
        ret = ret.as_subclass(StateCopy)
        ret._um_link = link
    return ret


def _storage_ptr(tensor):
    """Where tensor's storage starts (untyped on 2.x: storage() warns)."""
    if hasattr(tensor, "untyped_storage"):
        return tensor.untyped_storage().data_ptr()
    return tensor.storage().data_ptr()


def _state_copy(tensor, state, key):
    with torch._C.DisableTorchFunction():
        out = tensor.as_subclass(StateCopy)
        out._um_link = _Link(state, key, out)
    return out


def _make(region, where):
    """The state tensor layout entry where describes, over region."""
    offset, dtype, shape, stride, like = where
    return dtensors.wrap(views.make(region, dtype, shape, offset, stride),
                         like)


class _Slot:
    """One region holding the state of one or more parameters."""

    def __init__(self, region):
        self.region = region
        self.states = []	# the ParamStates laid out in it

    @property
    def cost(self):
        """Device bytes it takes: libum maps device memory in granules."""
        return -(-self.region.nbytes // GRANULE) * GRANULE


GRANULE = 2 << 20	# device granularity of sim and the CUDA VMM backing


class ParamState(collections.abc.MutableMapping):
    """A parameter's state: keys in layout live in slot's region at
    (offset, dtype, shape, stride, like) (stride as torch lays out a copy
    of the state: channels_last stays channels_last; like: a DTensor's
    spec (dtensors.py), whose local shard is what the region holds, or
    None); the others are plain values."""

    def __init__(self, offload, slot, layout, plain, order):
        self._offload = offload
        self._slot = slot
        self._layout = layout
        self._plain = plain
        self._order = order	# keys in the optimizer's order
        self._live = {}
        self._bound = False	# inside a step, in the bucket stepped

    # ---- binding, by the offload ---------------------------------------

    def _bind(self):
        self._bound = True
        region = self._slot.region
        for key, where in self._layout.items():
            self._live[key] = _make(region, where)

    def _unbind(self):
        self._bound = False
        for view in self._live.values():
            views.empty(view)
        self._live = {}

    @property
    def nbytes(self):
        return sum(views.nbytes(where[1], where[2])
                   for where in self._layout.values())

    # ---- the mapping ------------------------------------------------------

    def __getitem__(self, key):
        if key in self._live:
            return self._live[key]
        if self._offload.stepping and not self._bound:
            # the step reads another bucket's state: its update is not
            # per parameter (and one to a copy would be lost)
            raise RuntimeError(
                "%s's step read optimizer state of a parameter outside the "
                "bucket being stepped: its update is not per parameter "
                "(offload it with per_parameter=False)"
                % type(self._offload.optimizer).__name__)
        if key in self._layout:
            copy = self.to_dict(keys=[key])[key]
            if dtensors.is_dtensor(copy):	# a plain copy, not linked
                return copy
            return _state_copy(copy, self, key)
        return self._plain[key]

    def __setitem__(self, key, value):
        if key in self._live:
            if value is not self._live[key]:
                dtensors.local(self._live[key]).copy_(dtensors.local(value))
        elif key in self._layout:
            with self._offload._held([self._slot]):
                view = _make(self._slot.region, self._layout[key])
                try:
                    dtensors.local(view).copy_(dtensors.local(value))
                finally:
                    views.empty(view)
        else:
            if key not in self._plain:
                self._order.append(key)
            self._plain[key] = value

    def __delitem__(self, key):
        if key in self._layout:		# its bytes stay unused in the region
            del self._layout[key]
            view = self._live.pop(key, None)
            views.empty(view)
        else:
            del self._plain[key]
        self._order.remove(key)

    def __iter__(self):
        return iter(list(self._order))

    def __len__(self):
        return len(self._order)

    def to_dict(self, keys=None, device=None):
        """Plain copies (on device, default: where the state lives)."""
        keys = self._order if keys is None else keys
        out = {}
        need = not self._live and any(k in self._layout for k in keys)
        with self._offload._held([self._slot]) if need \
                else contextlib.nullcontext():
            for key in keys:
                if key in self._layout:
                    view = self._live.get(key)
                    src = view if view is not None else _make(
                        self._slot.region, self._layout[key])
                    out[key] = src.to(device, copy=True) if device \
                        else src.clone()
                    if view is None:
                        views.empty(src)
                else:
                    out[key] = self._plain[key]
        return out

    def __repr__(self):
        return repr(self.to_dict())

    def __deepcopy__(self, memo):
        return copy.deepcopy(self.to_dict(), memo)

    def __reduce__(self):
        return (dict, (list(self.to_dict().items()),))
