# SPDX-License-Identifier: MIT
"""umtorch: PyTorch on libum.

    import umtorch
    with umtorch.Context(backend="sim", device_budget="64M") as ctx:
        off = umtorch.offload_optimizer(torch.optim.Adam(model.parameters()),
                                        ctx)
        ...train: off.optimizer.step() acquires the state, then releases it

Context and Region wrap libum's context and regions (ctypes over
libum.so.0); offload_optimizer() keeps an optimizer's state in regions of
kind optimizer_state; umtorch.cuda installs libumtorch.so as torch's CUDA
allocator. Errors are UmError (an OSError: .errno, and .rc == -errno).
See README.rst and umtorch(7).
"""

from .context import Context, Event, Region
from .errors import UmError, UmTypeError, UmValueError, parse_size
from .optim import OptimizerOffload, offload_optimizer

__all__ = ["Context", "Event", "Region", "UmError", "UmTypeError",
           "UmValueError", "parse_size", "OptimizerOffload",
           "offload_optimizer"]
