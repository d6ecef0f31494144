# SPDX-License-Identifier: MIT
"""ParamState: one parameter's optimizer state, its big tensors in a region.

A region's memory may be touched only while it is acquired, and between
steps it is not: so the tensors over it exist only inside a step ("live",
bound by the offload) and are emptied in place after it. Outside a step,
reading a key acquires the region and returns a copy, writing one copies
into the region; repr(), copy.deepcopy() and pickling see plain copies.
Nothing outside a step ever holds a pointer into a region.
"""

import collections.abc
import contextlib
import copy

from . import views


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
    (offset, dtype, shape); the others are plain values."""

    def __init__(self, offload, slot, layout, plain, order):
        self._offload = offload
        self._slot = slot
        self._layout = layout
        self._plain = plain
        self._order = order	# keys in the optimizer's order
        self._live = {}

    # ---- binding, by the offload ---------------------------------------

    def _bind(self):
        region = self._slot.region
        for key, (off, dtype, shape) in self._layout.items():
            self._live[key] = views.make(region, dtype, shape, off)

    def _unbind(self):
        for view in self._live.values():
            views.empty(view)
        self._live = {}

    @property
    def nbytes(self):
        return sum(views.nbytes(dtype, shape)
                   for _, dtype, shape in self._layout.values())

    # ---- the mapping ------------------------------------------------------

    def __getitem__(self, key):
        if key in self._live:
            return self._live[key]
        if key in self._layout:
            if self._offload.stepping:	# an update would go to a copy
                raise RuntimeError("optimizer state of a parameter outside "
                                   "the bucket being stepped")
            return self.to_dict(keys=[key])[key]
        return self._plain[key]

    def __setitem__(self, key, value):
        if key in self._live:
            if value is not self._live[key]:
                self._live[key].copy_(value)
        elif key in self._layout:
            with self._offload._held([self._slot]):
                off, dtype, shape = self._layout[key]
                view = views.make(self._slot.region, dtype, shape, off)
                try:
                    view.copy_(value)
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
                    off, dtype, shape = self._layout[key]
                    view = self._live.get(key)
                    src = view if view is not None else views.make(
                        self._slot.region, dtype, shape, off)
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
