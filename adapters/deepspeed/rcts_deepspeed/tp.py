"""Tensor parallelism for the shared block over gloo, one process per rank, and the
minimal `mpu` DeepSpeed's checkpointing asks for (checkpointing.configure reads its
tensor-model-parallel rank, size and group; model_parallel_cuda_manual_seed its rank).

Every rank of the world is one TP group (the adapter runs TP only: no data or pipeline
parallelism). Sums over the ranks are rcts's (design §8, reduce.hpp): gather every rank's
tensor, then add them in rank order, so every rank holds the same bits whatever the
world size (a ring all-reduce adds in another order on each rank).
"""
import torch
import torch.distributed as dist


def rank_order_sum(t, group):
    parts = [torch.empty_like(t) for _ in range(dist.get_world_size(group))]
    dist.all_gather(parts, t.contiguous(), group=group)
    out = parts[0].clone()
    for p in parts[1:]:
        out += p
    return out


class _Copy(torch.autograd.Function):
    """Enter a column-parallel layer: identity forward, gradient summed over the ranks."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return rank_order_sum(g, ctx.group), None


class _Reduce(torch.autograd.Function):
    """Leave a row-parallel layer: partial products summed over the ranks, gradient as is."""

    @staticmethod
    def forward(ctx, x, group):
        return rank_order_sum(x, group)

    @staticmethod
    def backward(ctx, g):
        return g, None


class TensorParallel:
    def __init__(self, group):
        self.group = group
        self.size = dist.get_world_size(group)
        self.rank = dist.get_rank(group)

    def copy(self, x):
        return _Copy.apply(x, self.group)

    def reduce(self, x):
        return _Reduce.apply(x, self.group)


class Mpu:
    """What DeepSpeed's checkpointing calls on an mpu; nothing more. `rank` overrides the
    TP rank it reports (the tp_seed_without_rank fault's mpu says 0)."""

    def __init__(self, group, rank=None):
        self.group, self.rank = group, rank

    def get_tensor_model_parallel_rank(self):
        return dist.get_rank(self.group) if self.rank is None else self.rank

    def get_tensor_model_parallel_world_size(self):
        return dist.get_world_size(self.group)

    def get_tensor_model_parallel_group(self):
        return self.group

    # Data parallelism: one replica (model_parallel_cuda_manual_seed logs the DP rank).
    def get_data_parallel_rank(self):
        return 0

    def get_data_parallel_world_size(self):
        return 1
