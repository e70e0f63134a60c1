"""The trainer's processes under torchrun: which rank this is, and the two agreements ranks need (stop at the same
step; wait for rank 0's housekeeping). With one process every call is free and imports nothing."""

from __future__ import annotations

import os


def rank() -> int:
    """This process's rank under torchrun (0 when alone). Rank 0 records metrics, heartbeats and the final model;
    every rank records its own episodes."""
    return int(os.environ.get("RANK", "0"))


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def all_ranks_agree(flag: bool, device) -> bool:
    """True on every rank when any rank says so: ranks must stop at the same step, or one waits forever."""
    import torch
    import torch.distributed as dist

    if world_size() == 1 or not dist.is_initialized():
        return flag
    tensor = torch.tensor([1 if flag else 0], device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return bool(tensor.item())


def barrier() -> None:
    import torch.distributed as dist

    if world_size() > 1 and dist.is_initialized():
        dist.barrier()
