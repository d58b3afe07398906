"""The differentiable collectives: allreduce, allgather, broadcast,
alltoall, reducescatter and their grouped forms, as torch.autograd
Functions.

Gradients are exact for the sum of every rank's loss (each rank runs
backward on its own loss; DistributedOptimizer then averages parameter
gradients, which makes them the gradients of the mean loss). So the
backward of allgather sums the incoming gradients over ranks and keeps this
rank's rows; of broadcast, sums them on the root (zero elsewhere); of
reducescatter, gathers them; of Min/Max allreduce, routes them to the
ranks holding the extreme (split between ties); of Product, multiplies by
the other ranks' factors. Horovod instead averages in allgather and
broadcast backward and scales reducescatter's by the number of ranks. On a
process set, "ranks" are its members and backward runs on the same set.
Adasum has no backward here (Horovod reduces the gradients with Adasum,
which is not the gradient of Adasum): NotImplementedError.
"""
import torch

from horovodcpp import _core
from horovodcpp.common.basics import Adasum, Average, Max, Min, Product, Sum
from horovodcpp.common.process_sets import global_process_set
from horovodcpp.common.util import resolve_op
from horovodcpp.torch import mpi_ops
from horovodcpp.torch.compression import Compression
from horovodcpp.torch.handles import synchronize


def _sum_over_ranks(tensor, process_set):
    return synchronize(mpi_ops.allreduce_async(tensor, op=Sum, process_set=process_set))


def _allreduce_grad(tensor, grad, op, prescale, postscale, process_set):
    """d/d tensor of the sum over ranks of <grad_r, allreduce(tensor)>."""
    scale = prescale * postscale
    if op == Adasum:
        raise NotImplementedError("allreduce with op=Adasum is not differentiable")
    if op in (Sum, Average):
        return synchronize(mpi_ops.allreduce_async(grad, op=op, prescale_factor=prescale,
                                                   postscale_factor=postscale,
                                                   process_set=process_set))
    scaled = tensor * prescale
    if op in (Min, Max):
        extreme = synchronize(mpi_ops.allreduce_async(scaled, op=op, process_set=process_set))
        holds = (scaled == extreme).to(grad.dtype)
        return (_sum_over_ranks(grad, process_set) * holds / _sum_over_ranks(holds, process_set)
                * scale)
    if op == Product:
        factors = synchronize(mpi_ops.allgather_async(scaled.unsqueeze(0),
                                                      process_set=process_set))
        factors[process_set.rank()] = 1
        return _sum_over_ranks(grad, process_set) * factors.prod(dim=0) * scale
    raise ValueError("unknown reduction {}".format(op))


def _compressed(compression, tensors, run):
    """run(*compressed tensors) -> outputs, decompressed."""
    compressed, ctxs = zip(*[compression.compress(t) for t in tensors])
    return [compression.decompress(t, c) for t, c in zip(run(*compressed), ctxs)]


def _rows_of_every_rank(rows, process_set):
    """Every rank's row counts for a list of this rank's row counts."""
    counts = torch.tensor(rows, dtype=torch.int64).unsqueeze(0)
    return synchronize(mpi_ops.allgather_async(counts, process_set=process_set))  # [size, rows]


def _own_rows(summed, counts, member, shape, process_set):
    me = process_set.rank()
    offset = int(counts[:me, member].sum())
    rows = int(counts[me, member])
    return summed.narrow(0, offset, rows).reshape(shape)


class HorovodAllreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, op, prescale_factor, postscale_factor, process_set):
        ctx.save_for_backward(tensor)
        ctx.args = (op, prescale_factor, postscale_factor, process_set)
        return synchronize(mpi_ops.allreduce_async(tensor, name=name, op=op,
                                                   prescale_factor=prescale_factor,
                                                   postscale_factor=postscale_factor,
                                                   process_set=process_set))

    @staticmethod
    def backward(ctx, grad_output):
        (tensor,) = ctx.saved_tensors
        return (_allreduce_grad(tensor, grad_output, *ctx.args),) + (None,) * 5


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """Returns postscale_factor * op(prescale_factor * tensor) over the ranks
    of `process_set` (default: all), as a new tensor; `op` defaults to
    Average. Differentiable. `compression` (e.g. Compression.fp16) converts
    the tensor for the transfer."""
    op = resolve_op(op, average)
    return _compressed(compression, [tensor], lambda t: [HorovodAllreduce.apply(
        t, name, op, prescale_factor, postscale_factor, process_set)])[0]


class HorovodGroupedAllreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, op, prescale_factor, postscale_factor, process_set, *tensors):
        ctx.save_for_backward(*tensors)
        ctx.args = (op, prescale_factor, postscale_factor, process_set)
        return tuple(synchronize(mpi_ops.grouped_allreduce_async(
            tensors, name=name, op=op, prescale_factor=prescale_factor,
            postscale_factor=postscale_factor, process_set=process_set)))

    @staticmethod
    def backward(ctx, *grads):
        op, prescale, postscale, process_set = ctx.args
        if op in (Sum, Average):
            result = synchronize(mpi_ops.grouped_allreduce_async(
                grads, op=op, prescale_factor=prescale, postscale_factor=postscale,
                process_set=process_set))
        else:
            result = [_allreduce_grad(t, g, *ctx.args) for t, g in zip(ctx.saved_tensors, grads)]
        return (None,) * 5 + tuple(result)


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """allreduce of a list of tensors as one group; returns a list."""
    if not tensors:
        return []
    op = resolve_op(op, average)
    return _compressed(compression, tensors, lambda *ts: HorovodGroupedAllreduce.apply(
        name, op, prescale_factor, postscale_factor, process_set, *ts))


class HorovodAllgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, process_set):
        ctx.shape = tensor.shape
        ctx.process_set = process_set
        return synchronize(mpi_ops.allgather_async(tensor, name=name, process_set=process_set))

    @staticmethod
    def backward(ctx, grad_output):
        ps = ctx.process_set
        rows = ctx.shape[0] if len(ctx.shape) else 1  # scalars are gathered as [1]
        counts = _rows_of_every_rank([rows], ps)
        return _own_rows(_sum_over_ranks(grad_output, ps), counts, 0, ctx.shape, ps), None, None


def allgather(tensor, name=None, process_set=global_process_set):
    """Concatenates every rank's `tensor` along the first dimension (which may
    differ between ranks). Differentiable."""
    return HorovodAllgather.apply(tensor, name, process_set)


class HorovodGroupedAllgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, process_set, *tensors):
        ctx.shapes = [t.shape for t in tensors]
        ctx.process_set = process_set
        return tuple(synchronize(mpi_ops.grouped_allgather_async(tensors, name=name,
                                                                 process_set=process_set)))

    @staticmethod
    def backward(ctx, *grads):
        ps = ctx.process_set
        counts = _rows_of_every_rank([s[0] if len(s) else 1 for s in ctx.shapes], ps)
        summed = synchronize(mpi_ops.grouped_allreduce_async(grads, op=Sum, process_set=ps))
        return (None, None) + tuple(_own_rows(g, counts, i, s, ps)
                                    for i, (g, s) in enumerate(zip(summed, ctx.shapes)))


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    """allgather of a list of tensors as one group; returns a list."""
    if not tensors:
        return []
    return list(HorovodGroupedAllgather.apply(name, process_set, *tensors))


class HorovodBroadcast(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set):
        ctx.root_rank = root_rank
        ctx.process_set = process_set
        return synchronize(mpi_ops.broadcast_async(tensor, root_rank, name=name,
                                                   process_set=process_set))

    @staticmethod
    def backward(ctx, grad_output):
        summed = _sum_over_ranks(grad_output, ctx.process_set)
        if _core.rank() != ctx.root_rank:
            summed.zero_()
        return summed, None, None, None


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """Returns root_rank's `tensor` on every rank (a new tensor).
    Differentiable."""
    return HorovodBroadcast.apply(tensor, root_rank, name, process_set)


class HorovodAlltoall(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, splits, name, process_set):
        output, received_splits = synchronize(mpi_ops.alltoall_async(
            tensor, splits, name=name, process_set=process_set))
        ctx.received_splits = received_splits
        ctx.process_set = process_set
        ctx.mark_non_differentiable(received_splits)
        return output, received_splits

    @staticmethod
    def backward(ctx, grad_output, _):
        grad, _ = synchronize(mpi_ops.alltoall_async(grad_output, ctx.received_splits,
                                                     process_set=ctx.process_set))
        return grad, None, None, None


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Sends splits[j] rows of `tensor` to rank j (equal parts without
    splits) and returns the rows received, in rank order; with splits, also
    how many rows came from each rank. Differentiable."""
    output, received_splits = HorovodAlltoall.apply(tensor, splits, name, process_set)
    return output if splits is None else (output, received_splits)


def _reducescatter_grad(grads, op, prescale, postscale, process_set):
    scale = prescale * postscale / (process_set.size() if op == Average else 1)
    gathered = synchronize(mpi_ops.grouped_allgather_async(grads, process_set=process_set))
    return [g * scale for g in gathered]


class HorovodReducescatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, op, process_set, prescale_factor, postscale_factor):
        ctx.args = (op, prescale_factor, postscale_factor, process_set)
        return synchronize(mpi_ops.reducescatter_async(
            tensor, name=name, op=op, process_set=process_set, prescale_factor=prescale_factor,
            postscale_factor=postscale_factor))

    @staticmethod
    def backward(ctx, grad_output):
        return (_reducescatter_grad([grad_output], *ctx.args)[0],) + (None,) * 5


def reducescatter(tensor, name=None, compression=Compression.none, op=Average,
                  process_set=global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    """Reduces `tensor` (same shape on every rank) with `op` (Average or Sum)
    and returns this rank's share of the first dimension. Differentiable."""
    return _compressed(compression, [tensor], lambda t: [HorovodReducescatter.apply(
        t, name, op, process_set, prescale_factor, postscale_factor)])[0]


class HorovodGroupedReducescatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, op, process_set, prescale_factor, postscale_factor, *tensors):
        ctx.args = (op, prescale_factor, postscale_factor, process_set)
        return tuple(synchronize(mpi_ops.grouped_reducescatter_async(
            tensors, name=name, op=op, process_set=process_set, prescale_factor=prescale_factor,
            postscale_factor=postscale_factor)))

    @staticmethod
    def backward(ctx, *grads):
        return (None,) * 5 + tuple(_reducescatter_grad(list(grads), *ctx.args))


def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0):
    """reducescatter of a list of tensors as one group; returns a list."""
    if not tensors:
        return []
    return _compressed(compression, tensors, lambda *ts: HorovodGroupedReducescatter.apply(
        name, op, process_set, prescale_factor, postscale_factor, *ts))
