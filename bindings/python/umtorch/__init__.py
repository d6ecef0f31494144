# SPDX-License-Identifier: MIT
"""umtorch: PyTorch on libum.

    import torch, umtorch
    with umtorch.Context(backend="sim", device_budget="64M") as ctx:
        opt = torch.optim.AdamW(model.parameters())
        umtorch.offload_optimizer(opt, ctx, model=model)
        ...train: opt.step() runs bucket by bucket, the state resident
        print(umtorch.memory_summary(ctx))

Context and Region wrap libum's context and regions (ctypes over
libum.so.0); offload_optimizer() keeps an optimizer's state in regions of
kind optimizer_state; umtorch.memory is torch.cuda's memory API over
libum; umtorch.cuda installs libumtorch.so as torch's CUDA allocator.
Errors are UmError (an OSError: .errno, and .rc == -errno).
See README.rst and umtorch(7).
"""

from . import cuda, memory
from .context import Context, Event, Region
from .errors import UmError, UmTypeError, UmValueError, parse_size
from .memory import (dump_snapshot, leak_check, memory_stats,
                     memory_summary, record_history,
                     reset_peak_memory_stats, snapshot, step_mark, timeline)
from .optim import OptimizerOffload, offload_optimizer
from .state import ParamState, StateCopy

__all__ = ["Context", "Event", "Region", "UmError", "UmTypeError",
           "UmValueError", "parse_size", "OptimizerOffload",
           "offload_optimizer", "ParamState", "StateCopy", "cuda", "memory",
           "memory_stats", "reset_peak_memory_stats", "memory_summary",
           "record_history", "snapshot", "dump_snapshot", "timeline",
           "leak_check", "step_mark"]
