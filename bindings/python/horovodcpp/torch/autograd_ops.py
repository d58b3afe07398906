"""The differentiable collectives: allreduce, allgather, broadcast,
alltoall, reducescatter and their grouped forms, as torch.autograd
Functions.

Their backward passes are Horovod's (horovod/torch/core_ops.py), so a script
gets the gradients it got with Horovod: allreduce's is the allreduce of the
incoming gradient with the same op and scale factors (Min, Max and Product
too); allgather's is the Average allreduce of the incoming gradient, this
rank's rows; broadcast's is the Average allreduce on the root, zero
elsewhere; reducescatter's gathers the incoming gradients, multiplied by
the number of ranks for Sum and by the scale factors; alltoall's sends the
gradients back. On a process set, "ranks" are its members and backward runs
on the same set.
Adasum included: its backward is the Adasum of the incoming gradients, as
in Horovod (not the gradient of Adasum).
"""
import torch

from horovodcpp import _core
from horovodcpp.common.basics import Average, Sum
from horovodcpp.common.process_sets import global_process_set
from horovodcpp.common.util import resolve_op
from horovodcpp.torch import compiling, core_ops
from horovodcpp.torch.compiling import is_compiling
from horovodcpp.torch.compression import Compression
from horovodcpp.torch.handles import synchronize
from horovodcpp.torch.reducing_compressor import reduces_itself, start_reductions


def _compressed(compression, tensors, run):
    """run(*compressed tensors) -> outputs, decompressed."""
    compressed, ctxs = zip(*[compression.compress(t) for t in tensors])
    return [compression.decompress(t, c) for t, c in zip(run(*compressed), ctxs)]


def _rows(shape):
    return shape[0] if len(shape) else 1  # scalars are gathered as [1]


def _own_rows(reduced, shapes, process_set):
    """This rank's rows of each gathered gradient in `reduced` (one per
    tensor of `shapes`): offsets from every rank's row counts."""
    counts = torch.tensor([[_rows(s) for s in shapes]], dtype=torch.int64)
    counts = synchronize(core_ops.allgather_async(counts, process_set=process_set))  # [size, n]
    me = process_set.rank()
    return [g.narrow(0, int(counts[:me, i].sum()), _rows(s)).reshape(s)
            for i, (g, s) in enumerate(zip(reduced, shapes))]


class HorovodAllreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, op, prescale_factor, postscale_factor, process_set):
        ctx.args = dict(op=op, prescale_factor=prescale_factor,
                        postscale_factor=postscale_factor, process_set=process_set)
        return _allreduce_into_new(tensor, name, op, prescale_factor, postscale_factor,
                                   process_set)

    @staticmethod
    def backward(ctx, grad_output):
        return (allreduce(grad_output, **ctx.args),) + (None,) * 5


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """Returns postscale_factor * op(prescale_factor * tensor) over the ranks
    of `process_set` (default: all), as a new tensor; `op` defaults to
    Average. Differentiable. `compression` (e.g. Compression.fp16) converts
    the tensor for the transfer; an instance of Compression.twobit or
    .powersgd reduces it with its state for `name` (then the result is not
    differentiable)."""
    op = resolve_op(op, average)
    if is_compiling() and not reduces_itself(compression):  # a custom operator in the graph
        return _compressed(compression, [tensor], lambda t: [compiling.OPS.allreduce(
            t, name or "", int(op), prescale_factor, postscale_factor,
            process_set.process_set_id)])[0]
    if compression is Compression.none and not (tensor.requires_grad and
                                                torch.is_grad_enabled()):
        # Nothing to differentiate: no autograd Function around the call.
        return _allreduce_into_new(tensor, name, op, prescale_factor, postscale_factor,
                                   process_set)
    if reduces_itself(compression):
        return start_reductions(compression, [tensor], [name], op, prescale_factor,
                                postscale_factor, process_set)()[0]
    return _compressed(compression, [tensor], lambda t: [HorovodAllreduce.apply(
        t, name, op, prescale_factor, postscale_factor, process_set)])[0]


def _allreduce_into_new(tensor, name, op, prescale_factor, postscale_factor, process_set):
    if tensor.is_contiguous():  # reduced straight into a new tensor
        return core_ops.allreduce_blocking(tensor, torch.empty_like(tensor), name, op,
                                          prescale_factor, postscale_factor, process_set)
    output = tensor.clone(memory_format=torch.contiguous_format)  # reduced in place
    return core_ops.allreduce_blocking(output, output, name, op, prescale_factor,
                                      postscale_factor, process_set)


class HorovodGroupedAllreduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, op, prescale_factor, postscale_factor, process_set, *tensors):
        ctx.args = dict(op=op, prescale_factor=prescale_factor,
                        postscale_factor=postscale_factor, process_set=process_set)
        return tuple(synchronize(core_ops.grouped_allreduce_async(tensors, name=name, **ctx.args)))

    @staticmethod
    def backward(ctx, *grads):
        return (None,) * 5 + tuple(grouped_allreduce(list(grads), **ctx.args))


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """allreduce of a list of tensors as one group; returns a list. With a
    compressor that reduces itself, tensor i is reduced as "<name>.<i>"."""
    if not tensors:
        return []
    op = resolve_op(op, average)
    if is_compiling() and not reduces_itself(compression):
        return _compressed(compression, tensors, lambda *ts: compiling.OPS.grouped_allreduce(
            list(ts), name or "", int(op), prescale_factor, postscale_factor,
            process_set.process_set_id))
    if reduces_itself(compression):
        return start_reductions(compression, tensors,
                                ["{}.{}".format(name, i) if name else None
                                 for i in range(len(tensors))],
                                op, prescale_factor, postscale_factor, process_set)()
    return _compressed(compression, tensors, lambda *ts: HorovodGroupedAllreduce.apply(
        name, op, prescale_factor, postscale_factor, process_set, *ts))


class HorovodAllgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, process_set):
        ctx.shape = tensor.shape
        ctx.process_set = process_set
        return synchronize(core_ops.allgather_async(tensor, name=name, process_set=process_set))

    @staticmethod
    def backward(ctx, grad_output):
        ps = ctx.process_set
        reduced = allreduce(grad_output, op=Average, process_set=ps)
        return _own_rows([reduced], [ctx.shape], ps)[0], None, None


def allgather(tensor, name=None, process_set=global_process_set):
    """Concatenates every rank's `tensor` along the first dimension (which may
    differ between ranks). Differentiable."""
    if is_compiling():
        return compiling.OPS.allgather(tensor, name or "", process_set.process_set_id)
    return HorovodAllgather.apply(tensor, name, process_set)


class HorovodGroupedAllgather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, process_set, *tensors):
        ctx.shapes = [t.shape for t in tensors]
        ctx.process_set = process_set
        return tuple(synchronize(core_ops.grouped_allgather_async(tensors, name=name,
                                                                 process_set=process_set)))

    @staticmethod
    def backward(ctx, *grads):
        ps = ctx.process_set
        reduced = grouped_allreduce(list(grads), op=Average, process_set=ps)
        return (None, None) + tuple(_own_rows(reduced, ctx.shapes, ps))


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
        return synchronize(core_ops.broadcast_async(tensor, root_rank, name=name,
                                                   process_set=process_set))

    @staticmethod
    def backward(ctx, grad_output):
        reduced = allreduce(grad_output, op=Average, process_set=ctx.process_set)
        if _core.rank() != ctx.root_rank:
            reduced = reduced * 0
        return reduced, None, None, None


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """Returns root_rank's `tensor` on every rank (a new tensor).
    Differentiable."""
    if is_compiling():
        return compiling.OPS.broadcast(tensor, root_rank, name or "", process_set.process_set_id)
    return HorovodBroadcast.apply(tensor, root_rank, name, process_set)


class HorovodAlltoall(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, splits, name, process_set):
        output, received_splits = synchronize(core_ops.alltoall_async(
            tensor, splits, name=name, process_set=process_set))
        ctx.received_splits = received_splits
        ctx.process_set = process_set
        ctx.mark_non_differentiable(received_splits)
        return output, received_splits

    @staticmethod
    def backward(ctx, grad_output, _):
        grad, _ = synchronize(core_ops.alltoall_async(grad_output, ctx.received_splits,
                                                     process_set=ctx.process_set))
        return grad, None, None, None


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Sends splits[j] rows of `tensor` to rank j (equal parts without
    splits) and returns the rows received, in rank order; with splits, also
    how many rows came from each rank. Differentiable."""
    if is_compiling():
        if splits is not None and not isinstance(splits, torch.Tensor):
            splits = torch.tensor(splits, dtype=torch.int32)
        output, received_splits = compiling.OPS.alltoall(tensor, splits, name or "",
                                                        process_set.process_set_id)
        return output if splits is None else (output, received_splits)
    output, received_splits = HorovodAlltoall.apply(tensor, splits, name, process_set)
    return output if splits is None else (output, received_splits)


def _reducescatter_grads(grads, op, prescale, postscale, process_set):
    """The incoming gradients scaled as Horovod's reducescatter backward
    scales them before gathering: by the set's size for Sum, then by the
    scale factors (not divided by the size for Average)."""
    scale = prescale * postscale * (process_set.size() if op == Sum else 1)
    return [g * scale for g in grads]


class HorovodReducescatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, op, process_set, prescale_factor, postscale_factor):
        ctx.args = (op, prescale_factor, postscale_factor, process_set)
        return synchronize(core_ops.reducescatter_async(
            tensor, name=name, op=op, process_set=process_set, prescale_factor=prescale_factor,
            postscale_factor=postscale_factor))

    @staticmethod
    def backward(ctx, grad_output):
        (grad,) = _reducescatter_grads([grad_output], *ctx.args)
        return (allgather(grad, process_set=ctx.args[-1]),) + (None,) * 5


def reducescatter(tensor, name=None, compression=Compression.none, op=Average,
                  process_set=global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    """Reduces `tensor` (same shape on every rank) with `op` (Average or Sum)
    and returns this rank's share of the first dimension. Differentiable."""
    if is_compiling():
        return _compressed(compression, [tensor], lambda t: [compiling.OPS.reducescatter(
            t, name or "", int(op), process_set.process_set_id, prescale_factor,
            postscale_factor)])[0]
    return _compressed(compression, [tensor], lambda t: [HorovodReducescatter.apply(
        t, name, op, process_set, prescale_factor, postscale_factor)])[0]


class HorovodGroupedReducescatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, op, process_set, prescale_factor, postscale_factor, *tensors):
        ctx.args = (op, prescale_factor, postscale_factor, process_set)
        return tuple(synchronize(core_ops.grouped_reducescatter_async(
            tensors, name=name, op=op, process_set=process_set, prescale_factor=prescale_factor,
            postscale_factor=postscale_factor)))

    @staticmethod
    def backward(ctx, *grads):
        scaled = _reducescatter_grads(grads, *ctx.args)
        return (None,) * 5 + tuple(grouped_allgather(scaled, process_set=ctx.args[-1]))


def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0):
    """reducescatter of a list of tensors as one group; returns a list."""
    if not tensors:
        return []
    return _compressed(compression, tensors, lambda *ts: HorovodGroupedReducescatter.apply(
        name, op, process_set, prescale_factor, postscale_factor, *ts))
