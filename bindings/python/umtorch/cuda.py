# SPDX-License-Identifier: MIT
"""libumtorch.so as torch's CUDA allocator (CUDAPluggableAllocator).

Every CUDA tensor torch allocates then is a libum region acquired for its
life, on the same device budget as the optimizer state umtorch offloads:
when torch needs memory, libum evicts released state to make room. It must
be installed before torch allocates any CUDA memory (a torch rule).
"""

import errno

from . import _lib
from .context import Context
from .errors import UmError, bad_type, check

MALLOC, FREE = "um_torch_malloc", "um_torch_free"


def shim():
    """The loaded libumtorch.so (ctypes), for its counters and tests."""
    return _lib.shim()


def attach(ctx):
    """Make the shim allocate in ctx (instead of a context of its own
    made from LIBUM_*); -EBUSY while its allocations live elsewhere."""
    if not isinstance(ctx, Context):
        raise bad_type("ctx", ctx, "umtorch.Context")
    check(shim().um_torch_attach(ctx._ctx("attach")), "um_torch_attach")


def detach():
    check(shim().um_torch_detach(), "um_torch_detach")


def errors():
    """(failed calls so far, this thread's last result as -errno or 0)."""
    lib = shim()
    return lib.um_torch_error_count(), lib.um_torch_last_error()


def install_allocator(ctx=None):
    """Route torch's CUDA allocations through libumtorch.so (in ctx, if
    given). Raises UmError -ENODEV without CUDA, -ENOSYS where torch has
    no CUDAPluggableAllocator (before 2.0). Returns the allocator."""
    import torch
    if not torch.cuda.is_available():
        raise UmError(-errno.ENODEV, "install_allocator", "no CUDA device")
    memory = torch.cuda.memory
    if not hasattr(memory, "CUDAPluggableAllocator"):
        raise UmError(-errno.ENOSYS, "install_allocator",
                      "torch %s has no CUDAPluggableAllocator"
                      % torch.__version__)
    shim()
    if ctx is not None:
        attach(ctx)
    alloc = memory.CUDAPluggableAllocator(_lib.SHIM_PATH, MALLOC, FREE)
    memory.change_current_allocator(alloc)
    return alloc
