# SPDX-License-Identifier: MIT
"""State of DTensor parameters (FSDP2's fully_shard, tensor parallel).

The optimizer's state of a DTensor parameter is a DTensor of the same mesh
and placements (zeros_like of the parameter). Only its local shard has
bytes on this rank: that is what goes into a region, and the DTensor is
made again over the region's tensor each time the state is bound. Plain
tensors pass through every function here unchanged; on a torch without
DTensor (1.13) nothing is one.
"""

try:
    from torch.distributed.tensor import DTensor
except ImportError:	# torch 1.13 has it only under _tensor, unused there
    DTensor = None


def is_dtensor(tensor):
    return DTensor is not None and isinstance(tensor, DTensor)


def local(tensor):
    """The tensor whose bytes this rank holds (tensor itself if plain)."""
    return tensor._local_tensor if is_dtensor(tensor) else tensor


def spec(tensor):
    """What wrap() needs to make a DTensor like tensor again, or None."""
    if not is_dtensor(tensor):
        return None
    return (tensor.device_mesh, tuple(tensor.placements), tensor.shape,
            tensor.stride())


def wrap(tensor, like):
    """tensor (a local shard) as the DTensor spec like describes, sharing
    its bytes; tensor itself where like is None."""
    if like is None:
        return tensor
    mesh, placements, shape, stride = like
    return DTensor.from_local(tensor, mesh, placements, run_check=False,
                              shape=shape, stride=stride)
