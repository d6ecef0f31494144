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

from . import dtensors
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


def _dense(shape, stride):
    """Whether stride lays shape's elements out densely, none twice (a
    permutation of a contiguous layout, as channels_last is)."""
    expect = 1
    for size, step in sorted(zip(shape, stride), key=lambda d: d[1]):
        if size == 1:
            continue
        if step != expect:
            return False
        expect *= size
    return True


def _check(region, dtype, shape, offset, stride):
    if not isinstance(dtype, torch.dtype):
        raise bad_type("dtype", dtype, "torch.dtype")
    if isinstance(shape, int):
        shape = (shape,)
    if not all(isinstance(n, int) and n >= 0 for n in shape):
        raise UmValueError(-errno.EINVAL, "shape", "bad shape %r" % (shape,))
    if stride is not None and (len(stride) != len(shape) or
                               not _dense(shape, stride)):
        raise UmValueError(-errno.EINVAL, "stride", "stride %r does not lay "
                           "out shape %r densely" % (stride, shape))
    itemsize = _itemsize(dtype)
    nbytes = math.prod(shape) * itemsize
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise bad_type("offset", offset, "int")
    if offset < 0 or offset % itemsize or offset + nbytes > region.nbytes:
        raise UmValueError(-errno.EINVAL, "tensor", "%d bytes at offset %d "
                           "do not fit %r" % (nbytes, offset, region))
    return tuple(shape), nbytes


def layout_of(tensor):
    """The strides torch gives a copy of tensor (clone, .to, *_like with
    preserve_format): tensor's own where they are dense, else those torch
    infers (channels_last or contiguous). State in a region keeps them."""
    return torch.empty_like(tensor, device="meta").stride()


def nbytes(dtype, shape):
    return math.prod(shape) * _itemsize(dtype)


def _storage(region, dtype, device, offset, numel):
    """A storage of numel elements of dtype over the region's bytes from
    offset on, made once per region and (dtype, offset, numel): a step
    binds each state tensor onto it instead of wrapping the memory anew.

    Each tensor gets a storage of its own that starts at its first byte,
    so that every tensor sits at storage offset 0. Several tensors on one
    storage at non-zero offsets broke torch 1.13's sparse add into a
    dense tensor (add_(sparse) on such a tensor counts the storage offset
    twice: SparseAdam's exp_avg_sq stayed 0, and Adagrad wrote into the
    next parameter's state). Only tensors set onto a storage reach the
    memory, and those are emptied after the step."""
    key = (dtype, offset, numel)
    storage = region._storages.get(key)
    if storage is None:
        size = numel * _itemsize(dtype)
        if device == "cpu":
            raw = torch.frombuffer(
                (ctypes.c_char * size).from_address(region.ptr + offset),
                dtype=torch.uint8)
        else:
            raw = torch.as_tensor(_CudaArray(region.ptr + offset, size),
                                  device=device)
        raw = raw.view(dtype)
        # torch 2.x warns that TypedStorage (storage()) is deprecated
        storage = region._storages[key] = raw.untyped_storage() \
            if hasattr(raw, "untyped_storage") else raw.storage()
    return storage


def make(region, dtype, shape, offset, stride=None):
    """A tensor of dtype/shape (and stride: dense, contiguous if None)
    over region's bytes at offset, alone on a storage of its own (storage
    offset 0: see _storage)."""
    shape, nbytes = _check(region, dtype, shape, offset, stride)
    device = region.ctx.tensor_device(region.device)
    if nbytes == 0:
        return torch.empty(shape, dtype=dtype, device=device)
    out = torch.empty(0, dtype=dtype, device=device)
    numel = nbytes // _itemsize(dtype)
    storage = _storage(region, dtype, device, offset, numel)
    if stride is None:
        out.set_(storage, 0, shape)
    else:
        out.set_(storage, 0, shape, tuple(stride))
    return out


def empty(tensor):
    """Point tensor (if still alive; a DTensor's local shard) at no memory
    at all."""
    tensor = dtensors.local(tensor)
    if tensor is not None:
        with torch.no_grad():
            tensor.set_(torch.empty(0, dtype=tensor.dtype,
                                    device=tensor.device))
