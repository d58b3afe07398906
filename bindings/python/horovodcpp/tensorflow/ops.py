"""horovod.tensorflow's collectives, differentiable (tf.custom_gradient),
eagerly and inside tf.function: allreduce, grouped_allreduce, allgather,
grouped_allgather, broadcast, alltoall, reducescatter,
grouped_reducescatter.

Gradients are exact for the sum of every rank's loss, as in
horovodcpp.torch (each rank differentiates its own loss; the
DistributedGradientTape/Optimizer's averaging then gives the gradient of
the mean loss). So the backward of allgather sums the incoming gradients
over ranks and keeps this rank's rows; of broadcast, sums them on the root
(zero elsewhere); of reducescatter, gathers them; of Min/Max allreduce,
routes them to the ranks holding the extreme (split between ties); of
Product, multiplies by the other ranks' factors. Horovod instead averages
in allgather and broadcast backward and scales reducescatter's by the
number of ranks for Sum.

device_dense, device_sparse and ignore_name_scope are accepted for
Horovod's signatures: tensors are CPU tensors, and names never include
name scopes.
"""
import tensorflow as tf

from horovodcpp import _core
from horovodcpp.common.basics import Average, Max, Min, Product, Sum
from horovodcpp.common.process_sets import global_process_set
from horovodcpp.common.util import resolve_op
from horovodcpp.tensorflow import bridge, mpi_ops
from horovodcpp.tensorflow.compression import Compression


def _auto(prefix, tensor):
    return bridge.collective_name(prefix, None, tensor)


def _sum_ops(tensors):
    return [mpi_ops.allreduce_op(t, _auto("allreduce", t), Sum) for t in tensors]


def _differentiable(forward, backward, inputs):
    """forward(inputs) -> outputs; backward(inputs, grads of outputs) ->
    grads of inputs; all lists of tensors."""
    @tf.custom_gradient
    def fn(*xs):
        def grad(*dys):
            return backward(list(xs), list(dys))
        return forward(list(xs)), grad
    return list(fn(*inputs))


def _scaled(tensor, factor):
    return tensor if factor == 1.0 else tensor * tf.cast(factor, tensor.dtype)


def _allreduce_grads(xs, dys, op, prescale, postscale):
    """d/d x of the sum over ranks of <dy_r, allreduce(x)>, for each pair."""
    if op in (Sum, Average):
        return mpi_ops.run_one(_reduce_op(dys, _auto("allreduce", dys[0]), op, prescale,
                                          postscale))
    scale = prescale * postscale
    scaled = [_scaled(x, prescale) for x in xs]
    if op in (Min, Max):
        extremes = bridge.run([mpi_ops.allreduce_op(s, _auto("allreduce", s), op) for s in scaled])
        holds = [tf.cast(tf.equal(s, e[0]), dy.dtype) for s, e, dy in zip(scaled, extremes, dys)]
        sums = bridge.run(_sum_ops(dys) + _sum_ops(holds))
        n = len(dys)
        return [_scaled(sums[i][0] * holds[i] / sums[n + i][0], scale) for i in range(n)]
    if op == Product:
        gathered = bridge.run([mpi_ops.allgather_op(s[None], _auto("allgather", s))
                               for s in scaled] + _sum_ops(dys))
        grads = []
        for i, s in enumerate(scaled):
            # The product of every other rank's factor: this rank's row set to 1.
            factors = tf.tensor_scatter_nd_update(gathered[i][0], [[_core.rank()]],
                                                  tf.ones_like(s)[None])
            grads.append(_scaled(gathered[len(scaled) + i][0] * tf.reduce_prod(factors, 0), scale))
        return grads
    raise ValueError("unknown reduction {}".format(op))


def _compressed(compression, tensors, run):
    """run(compressed tensors) -> outputs, decompressed."""
    compressed, ctxs = zip(*[compression.compress(t) for t in tensors])
    return [compression.decompress(t, c) for t, c in zip(run(list(compressed)), ctxs)]


def _gather_slices(slices_list, op, prescale_factor, postscale_factor):
    """Allreduce of tf.IndexedSlices: every rank's values and indices are
    gathered (duplicate indices add up when applied)."""
    if op not in (Sum, Average):
        raise NotImplementedError("Only Sum and Average ops are supported with tf.IndexedSlices")
    if prescale_factor != 1.0 or postscale_factor != 1.0:
        raise NotImplementedError("Pre/postscale_factor are not supported with tf.IndexedSlices")
    collectives = []
    for s in slices_list:
        collectives += [mpi_ops.allgather_op(s.values, _auto("allgather", s.values)),
                        mpi_ops.allgather_op(s.indices, _auto("allgather", s.indices))]
    outputs = bridge.run(collectives)
    result = []
    for i, s in enumerate(slices_list):
        values = outputs[2 * i][0]
        if op == Average:
            values = values / tf.cast(_core.size(), values.dtype)
        result.append(tf.IndexedSlices(values, outputs[2 * i + 1][0], dense_shape=s.dense_shape))
    return result


def _reduce_op(tensors, name, op, prescale_factor, postscale_factor):
    """One allreduce, or a grouped one for several tensors (a lone tensor
    stays ungrouped so that the response cache serves it)."""
    if len(tensors) == 1:
        return mpi_ops.allreduce_op(tensors[0], name, op, prescale_factor, postscale_factor)
    return mpi_ops.grouped_allreduce_op(tensors, name, op, prescale_factor, postscale_factor)


def _allreduce_dense(tensors, prefix, name, compression, op, prescale_factor, postscale_factor):
    inputs = [tf.convert_to_tensor(t) for t in tensors]
    full_name = bridge.collective_name(prefix, name, inputs[0])

    def backward(xs, dys):
        return _allreduce_grads(xs, dys, op, prescale_factor, postscale_factor)

    def run(xs):
        return _differentiable(lambda ys: mpi_ops.run_one(_reduce_op(
            ys, full_name, op, prescale_factor, postscale_factor)), backward, xs)
    return _compressed(compression, inputs, run)


def allreduce(tensor, average=None, device_dense='', device_sparse='',
              compression=Compression.none, op=None, prescale_factor=1.0, postscale_factor=1.0,
              name=None, process_set=global_process_set, ignore_name_scope=False):
    """Returns postscale_factor * op(prescale_factor * tensor) over all ranks
    (`op` defaults to Average; Sum, Min, Max, Product also work). A
    tf.IndexedSlices is gathered instead (Sum and Average only).
    `compression` (e.g. Compression.fp16) converts the tensor for the
    transfer. Differentiable."""
    bridge.check_process_set(process_set)
    op = resolve_op(op, average)
    if isinstance(tensor, tf.IndexedSlices):
        return _gather_slices([tensor], op, prescale_factor, postscale_factor)[0]
    return _allreduce_dense([tensor], "allreduce", name, compression, op, prescale_factor,
                            postscale_factor)[0]


def grouped_allreduce(tensors, average=None, device_dense='', device_sparse='',
                      compression=Compression.none, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, process_set=global_process_set,
                      ignore_name_scope=False, name=None):
    """allreduce of a list of tensors as one group: negotiated together and
    fused into as few backend calls as possible. tf.IndexedSlices members
    are gathered. Returns a list."""
    bridge.check_process_set(process_set)
    if not tensors:
        return tensors
    op = resolve_op(op, average)
    results = list(tensors)
    sparse = [i for i, t in enumerate(tensors) if isinstance(t, tf.IndexedSlices)]
    dense = [i for i, t in enumerate(tensors) if not isinstance(t, tf.IndexedSlices)]
    if sparse:
        gathered = _gather_slices([tensors[i] for i in sparse], op, prescale_factor,
                                  postscale_factor)
        for i, g in zip(sparse, gathered):
            results[i] = g
    if dense:
        reduced = _allreduce_dense([tensors[i] for i in dense], "grouped_allreduce", name,
                                   compression, op, prescale_factor, postscale_factor)
        for i, r in zip(dense, reduced):
            results[i] = r
    return results


def _own_rows(summed, counts, member, x):
    """This rank's rows of `summed` (gathered along dim 0), shaped like x."""
    rank = _core.rank()
    offset = tf.reduce_sum(counts[:rank, member])
    return tf.reshape(summed[offset:offset + counts[rank, member]], tf.shape(x))


def _rows(x):
    return tf.shape(x, out_type=tf.int64)[0] if x.shape.rank != 0 else tf.constant(1, tf.int64)


def _allgather_grads(xs, dys):
    rows = tf.stack([_rows(x) for x in xs])[None]  # [1, members]
    outputs = bridge.run([mpi_ops.allgather_op(rows, _auto("allgather", rows))] + _sum_ops(dys))
    counts = outputs[0][0]  # [size, members]
    return [_own_rows(outputs[1 + i][0], counts, i, x) for i, x in enumerate(xs)]


def grouped_allgather(tensors, name=None, ignore_name_scope=False,
                      process_set=global_process_set):
    """allgather of a list of tensors as one group; returns a list."""
    bridge.check_process_set(process_set)
    if not tensors:
        return tensors
    tensors = [tf.convert_to_tensor(t) for t in tensors]
    full_name = bridge.collective_name("grouped_allgather", name, tensors[0])
    return _differentiable(
        lambda xs: mpi_ops.run_one(mpi_ops.grouped_allgather_op(xs, full_name)),
        _allgather_grads, tensors)


def allgather(tensor, name=None, ignore_name_scope=False, process_set=global_process_set):
    """Concatenates every rank's `tensor` along the first dimension (which may
    differ between ranks). Differentiable."""
    bridge.check_process_set(process_set)
    tensor = tf.convert_to_tensor(tensor)
    if tensor.dtype not in bridge.SUPPORTED_DTYPES:  # moved as bytes, not differentiable
        return mpi_ops.allgather(tensor, name)
    full_name = bridge.collective_name("allgather", name, tensor)
    return _differentiable(lambda xs: mpi_ops.run_one(mpi_ops.allgather_op(xs[0], full_name)),
                           _allgather_grads, [tensor])[0]


def broadcast(tensor, root_rank, name=None, ignore_name_scope=False,
              process_set=global_process_set):
    """Returns root_rank's `tensor` on every rank. Differentiable."""
    bridge.check_process_set(process_set)
    tensor = tf.convert_to_tensor(tensor)
    if tensor.dtype not in bridge.SUPPORTED_DTYPES:
        return mpi_ops.broadcast(tensor, root_rank, name)
    full_name = bridge.collective_name("broadcast", name, tensor)

    def backward(xs, dys):
        summed = mpi_ops.allreduce(dys[0], op=Sum)
        return [summed if _core.rank() == root_rank else tf.zeros_like(summed)]
    return _differentiable(
        lambda xs: mpi_ops.run_one(mpi_ops.broadcast_op(xs[0], root_rank, full_name)),
        backward, [tensor])[0]


def alltoall(tensor, splits=None, name=None, ignore_name_scope=False,
             process_set=global_process_set):
    """Sends splits[j] rows of `tensor` to rank j (equal parts without
    splits) and returns the rows received, in rank order; with splits, also
    how many rows came from each rank. Differentiable."""
    bridge.check_process_set(process_set)
    tensor = tf.convert_to_tensor(tensor)
    splits_tensor = None if splits is None else tf.convert_to_tensor(splits)
    if tensor.dtype not in bridge.SUPPORTED_DTYPES:
        output, received = mpi_ops.alltoall(tensor, splits_tensor, name)
        return output if splits is None else (output, received)
    full_name = bridge.collective_name("alltoall", name, tensor)
    received = []

    def forward(xs):
        output, received_splits = mpi_ops.run_one(
            mpi_ops.alltoall_op(xs[0], splits_tensor, full_name))
        received.append(received_splits)
        return [output]

    def backward(xs, dys):
        # Every rank sends back what it received from each rank.
        return [mpi_ops.alltoall(dys[0], received[0])[0]]
    output = _differentiable(forward, backward, [tensor])[0]
    return output if splits is None else (output, received[0])


def _reducescatter_grads(dys, op, prescale, postscale):
    scale = prescale * postscale / (_core.size() if op == Average else 1)
    gathered = bridge.run([mpi_ops.allgather_op(dy, _auto("allgather", dy)) for dy in dys])
    return [_scaled(g[0], scale) for g in gathered]


def _reducescatter(tensors, prefix, name, compression, op, prescale_factor, postscale_factor):
    inputs = [tf.convert_to_tensor(t) for t in tensors]
    full_name = bridge.collective_name(prefix, name, inputs[0])

    def forward(xs):
        if len(xs) == 1:
            return mpi_ops.run_one(mpi_ops.reducescatter_op(xs[0], full_name, op,
                                                            prescale_factor, postscale_factor))
        return mpi_ops.run_one(mpi_ops.grouped_reducescatter_op(xs, full_name, op,
                                                                prescale_factor, postscale_factor))

    def backward(xs, dys):
        return _reducescatter_grads(dys, op, prescale_factor, postscale_factor)
    return _compressed(compression, inputs,
                       lambda xs: _differentiable(forward, backward, xs))


def grouped_reducescatter(tensors, device_dense='', compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0, name=None, ignore_name_scope=False):
    """reducescatter of a list of tensors as one group; returns a list."""
    bridge.check_process_set(process_set)
    if not tensors:
        return tensors
    return _reducescatter(tensors, "grouped_reducescatter", name, compression, op,
                          prescale_factor, postscale_factor)


def reducescatter(tensor, device_dense='', compression=Compression.none, op=Average, name=None,
                  process_set=global_process_set, ignore_name_scope=False, prescale_factor=1.0,
                  postscale_factor=1.0):
    """Reduces `tensor` (same shape on every rank) with `op` (Average or Sum)
    and returns this rank's share of the first dimension: the first
    (rows % size) ranks get one row more. Differentiable."""
    bridge.check_process_set(process_set)
    return _reducescatter([tensor], "reducescatter", name, compression, op, prescale_factor,
                          postscale_factor)[0]
