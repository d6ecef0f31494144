# SPDX-License-Identifier: MIT
"""Tensors over region memory, and how they are emptied at free time.

The tensor returned is never a torch "view" of another tensor: it is a
fresh tensor set_() onto the storage that wraps the region's bytes, so it
can be emptied in place later (set_ is refused on views).
"""

import ctypes
import errno
import math

import torch

from .errors import UmValueError, bad_type


class _CudaArray:
    """Exports a device pointer through __cuda_array_interface__ (v2)."""

    def __init__(self, ptr, nbytes):
        self.__cuda_array_interface__ = {
            "shape": (nbytes,), "typestr": "|u1", "data": (ptr, False),
            "version": 2, "strides": None}


_ITEMSIZE = {}


def _itemsize(dtype):
    if dtype not in _ITEMSIZE:
        _ITEMSIZE[dtype] = torch.empty((), dtype=dtype).element_size()
    return _ITEMSIZE[dtype]


def _check(region, dtype, shape, offset):
    if not isinstance(dtype, torch.dtype):
        raise bad_type("dtype", dtype, "torch.dtype")
    if isinstance(shape, int):
        shape = (shape,)
    if not all(isinstance(n, int) and n >= 0 for n in shape):
        raise UmValueError(-errno.EINVAL, "shape", "bad shape %r" % (shape,))
    itemsize = _itemsize(dtype)
    nbytes = math.prod(shape) * itemsize
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise bad_type("offset", offset, "int")
    if offset < 0 or offset % itemsize or offset + nbytes > region.nbytes:
        raise UmValueError(-errno.EINVAL, "tensor", "%d bytes at offset %d "
                           "do not fit %r" % (nbytes, offset, region))
    return tuple(shape), nbytes


def nbytes(dtype, shape):
    return math.prod(shape) * _itemsize(dtype)


def _storage(region, dtype, device):
    """A storage of dtype over the region's whole bytes (its last partial
    element left out), made once per region and dtype: a step binds each
    state tensor onto it instead of wrapping the memory anew. Only tensors
    set onto it reach the memory, and those are emptied after the step."""
    storage = region._storages.get(dtype)
    if storage is None:
        size = region.nbytes - region.nbytes % _itemsize(dtype)
        if device == "cpu":
            raw = torch.frombuffer(
                (ctypes.c_char * size).from_address(region.ptr),
                dtype=torch.uint8)
        else:
            raw = torch.as_tensor(_CudaArray(region.ptr, size),
                                  device=device)
        raw = raw.view(dtype)
        # torch 2.x warns that TypedStorage (storage()) is deprecated
        storage = region._storages[dtype] = raw.untyped_storage() \
            if hasattr(raw, "untyped_storage") else raw.storage()
    return storage


def make(region, dtype, shape, offset):
    """A tensor of dtype/shape over region's bytes at offset."""
    shape, nbytes = _check(region, dtype, shape, offset)
    device = region.ctx.tensor_device(region.device)
    if nbytes == 0:
        return torch.empty(shape, dtype=dtype, device=device)
    out = torch.empty(0, dtype=dtype, device=device)
    out.set_(_storage(region, dtype, device), offset // _itemsize(dtype),
             shape)
    return out


def empty(tensor):
    """Point tensor (if still alive) at no memory at all."""
    if tensor is not None:
        with torch.no_grad():
            tensor.set_(torch.empty(0, dtype=tensor.dtype,
                                    device=tensor.device))
