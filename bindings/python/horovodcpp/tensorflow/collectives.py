"""horovod.tensorflow's collectives, differentiable (tf.custom_gradient),
eagerly and inside tf.function: allreduce, grouped_allreduce, allgather,
grouped_allgather, broadcast, alltoall, reducescatter,
grouped_reducescatter.

Gradients are Horovod's, as in horovodcpp.torch: allreduce's are exact for
the sum of every rank's loss; allgather's backward averages the incoming
gradients over the ranks and keeps this rank's rows; broadcast's averages
them on the root (zero elsewhere); reducescatter's gathers them, scaled by
the set's size for Sum and by the scale factors (so, like Horovod's, these
three are the exact gradient of the mean of the ranks' losses for allgather
and broadcast, and size times that of the sum for reducescatter).

Every one takes `process_set` (default: every rank); its backward runs
on the same set.

device_dense, device_sparse and ignore_name_scope are accepted for
Horovod's signatures: tensors are CPU tensors, and names never include
name scopes.
"""
import tensorflow as tf

from horovodcpp import _core
from horovodcpp.common.basics import Average, Max, Min, Product, Sum
from horovodcpp.common.process_sets import global_process_set
from horovodcpp.common.util import resolve_op
from horovodcpp.tensorflow import bridge, kernels
from horovodcpp.tensorflow.compression import Compression


def _auto(prefix, tensor):
    return bridge.collective_name(prefix, None, tensor)


def _sums(tensors, process_set, op=Sum):
    return [kernels.allreduce(t, _auto("allreduce", t), op, process_set=process_set)
            for t in tensors]


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


def _reduce(tensors, name, op, prescale_factor, postscale_factor, process_set):
    """One allreduce, or a grouped one for several tensors (a lone tensor
    stays ungrouped so that the response cache serves it)."""
    if len(tensors) == 1:
        return [kernels.allreduce(tensors[0], name, op, prescale_factor, postscale_factor,
                                  process_set)]
    return kernels.grouped_allreduce(tensors, name, op, prescale_factor, postscale_factor,
                                     process_set)


def _allreduce_grads(xs, dys, op, prescale, postscale, process_set):
    """d/d x of the sum over ranks of <dy_r, allreduce(x)>, for each pair."""
    if op in (Sum, Average):
        return _reduce(dys, _auto("allreduce", dys[0]), op, prescale, postscale, process_set)
    scale = prescale * postscale
    scaled = [_scaled(x, prescale) for x in xs]
    if op in (Min, Max):
        extremes = [kernels.allreduce(s, _auto("allreduce", s), op, process_set=process_set)
                    for s in scaled]
        holds = [tf.cast(tf.equal(s, e), dy.dtype) for s, e, dy in zip(scaled, extremes, dys)]
        sums, counts = _sums(dys, process_set), _sums(holds, process_set)
        return [_scaled(s * h / c, scale) for s, h, c in zip(sums, holds, counts)]
    if op == Product:
        gathered = [kernels.allgather(s[None], _auto("allgather", s), process_set)
                    for s in scaled]
        grads = []
        for s, g, total in zip(scaled, gathered, _sums(dys, process_set)):
            # The product of every other rank's factor: this rank's row set to 1.
            factors = tf.tensor_scatter_nd_update(g, [[process_set.rank()]], tf.ones_like(s)[None])
            grads.append(_scaled(total * tf.reduce_prod(factors, 0), scale))
        return grads
    raise ValueError("unknown reduction {}".format(op))


def _compressed(compression, tensors, run):
    """run(compressed tensors) -> outputs, decompressed."""
    compressed, ctxs = zip(*[compression.compress(t) for t in tensors])
    return [compression.decompress(t, c) for t, c in zip(run(list(compressed)), ctxs)]


def _gather_slices(slices_list, op, prescale_factor, postscale_factor, process_set):
    """Allreduce of tf.IndexedSlices: every rank's values and indices are
    gathered (duplicate indices add up when applied)."""
    if op not in (Sum, Average):
        raise NotImplementedError("Only Sum and Average ops are supported with tf.IndexedSlices")
    if prescale_factor != 1.0 or postscale_factor != 1.0:
        raise NotImplementedError("Pre/postscale_factor are not supported with tf.IndexedSlices")
    result = []
    for s in slices_list:
        values = kernels.allgather(s.values, _auto("allgather", s.values), process_set)
        indices = kernels.allgather(s.indices, _auto("allgather", s.indices), process_set)
        if op == Average:
            values = values / tf.cast(process_set.size(), values.dtype)
        result.append(tf.IndexedSlices(values, indices, dense_shape=s.dense_shape))
    return result


def _allreduce_dense(tensors, prefix, name, compression, op, prescale_factor, postscale_factor,
                     process_set):
    inputs = [tf.convert_to_tensor(t) for t in tensors]
    full_name = bridge.collective_name(prefix, name, inputs[0])

    def backward(xs, dys):
        return _allreduce_grads(xs, dys, op, prescale_factor, postscale_factor, process_set)

    def run(xs):
        return _differentiable(lambda ys: _reduce(ys, full_name, op, prescale_factor,
                                                  postscale_factor, process_set), backward, xs)
    return _compressed(compression, inputs, run)


def allreduce(tensor, average=None, device_dense='', device_sparse='',
              compression=Compression.none, op=None, prescale_factor=1.0, postscale_factor=1.0,
              name=None, process_set=global_process_set, ignore_name_scope=False):
    """Returns postscale_factor * op(prescale_factor * tensor) over the ranks
    of `process_set` (`op` defaults to Average; Sum, Min, Max, Product also
    work). A tf.IndexedSlices is gathered instead (Sum and Average only).
    `compression` (e.g. Compression.fp16) converts the tensor for the
    transfer. Differentiable."""
    op = resolve_op(op, average)
    if isinstance(tensor, tf.IndexedSlices):
        return _gather_slices([tensor], op, prescale_factor, postscale_factor, process_set)[0]
    return _allreduce_dense([tensor], "allreduce", name, compression, op, prescale_factor,
                            postscale_factor, process_set)[0]


def grouped_allreduce(tensors, average=None, device_dense='', device_sparse='',
                      compression=Compression.none, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, process_set=global_process_set,
                      ignore_name_scope=False, name=None):
    """allreduce of a list of tensors as one group: negotiated together and
    fused into as few backend calls as possible. tf.IndexedSlices members
    are gathered. Returns a list."""
    if not tensors:
        return tensors
    op = resolve_op(op, average)
    results = list(tensors)
    sparse = [i for i, t in enumerate(tensors) if isinstance(t, tf.IndexedSlices)]
    dense = [i for i, t in enumerate(tensors) if not isinstance(t, tf.IndexedSlices)]
    if sparse:
        gathered = _gather_slices([tensors[i] for i in sparse], op, prescale_factor,
                                  postscale_factor, process_set)
        for i, g in zip(sparse, gathered):
            results[i] = g
    if dense:
        reduced = _allreduce_dense([tensors[i] for i in dense], "grouped_allreduce", name,
                                   compression, op, prescale_factor, postscale_factor,
                                   process_set)
        for i, r in zip(dense, reduced):
            results[i] = r
    return results


def _rows(x):
    return tf.shape(x, out_type=tf.int64)[0] if x.shape.rank != 0 else tf.constant(1, tf.int64)


def _allgather_grads(xs, dys, process_set):
    """This rank's rows of each gradient, averaged over the ranks (Horovod's)."""
    rows = tf.stack([_rows(x) for x in xs])[None]  # [1, members]
    counts = kernels.allgather(rows, _auto("allgather", rows), process_set)  # [size, members]
    rank = process_set.rank()
    grads = []
    for i, (x, averaged) in enumerate(zip(xs, _sums(dys, process_set, Average))):
        offset = tf.reduce_sum(counts[:rank, i])
        grads.append(tf.reshape(averaged[offset:offset + counts[rank, i]], tf.shape(x)))
    return grads


def grouped_allgather(tensors, name=None, ignore_name_scope=False,
                      process_set=global_process_set):
    """allgather of a list of tensors as one group; returns a list."""
    if not tensors:
        return tensors
    tensors = [tf.convert_to_tensor(t) for t in tensors]
    full_name = bridge.collective_name("grouped_allgather", name, tensors[0])
    return _differentiable(
        lambda xs: kernels.grouped_allgather(xs, full_name, process_set),
        lambda xs, dys: _allgather_grads(xs, dys, process_set), tensors)


def allgather(tensor, name=None, ignore_name_scope=False, process_set=global_process_set):
    """Concatenates every rank's `tensor` along the first dimension (which may
    differ between ranks). Differentiable."""
    tensor = tf.convert_to_tensor(tensor)
    full_name = bridge.collective_name("allgather", name, tensor)
    if tensor.dtype not in bridge.SUPPORTED_DTYPES:  # moved as bytes, not differentiable
        return kernels.allgather(tensor, full_name, process_set)
    return _differentiable(lambda xs: [kernels.allgather(xs[0], full_name, process_set)],
                           lambda xs, dys: _allgather_grads(xs, dys, process_set), [tensor])[0]


def broadcast(tensor, root_rank, name=None, ignore_name_scope=False,
              process_set=global_process_set):
    """Returns root_rank's `tensor` on every rank (root_rank is a global
    rank). Differentiable."""
    tensor = tf.convert_to_tensor(tensor)
    full_name = bridge.collective_name("broadcast", name, tensor)
    if tensor.dtype not in bridge.SUPPORTED_DTYPES:
        return kernels.broadcast(tensor, root_rank, full_name, process_set)

    def backward(xs, dys):
        averaged = _sums(dys, process_set, Average)[0]  # Horovod's
        # Times 0, not zeros_like: in graph mode zeros_like of a static shape
        # would not run the allreduce here, which the root waits for.
        return [averaged if _core.rank() == root_rank else averaged * 0]
    return _differentiable(
        lambda xs: [kernels.broadcast(xs[0], root_rank, full_name, process_set)],
        backward, [tensor])[0]


def alltoall(tensor, splits=None, name=None, ignore_name_scope=False,
             process_set=global_process_set):
    """Sends splits[j] rows of `tensor` to rank j of the set (equal parts
    without splits) and returns the rows received, in rank order; with
    splits, also how many rows came from each rank. Differentiable."""
    tensor = tf.convert_to_tensor(tensor)
    full_name = bridge.collective_name("alltoall", name, tensor)
    if tensor.dtype not in bridge.SUPPORTED_DTYPES:
        output, received = kernels.alltoall(tensor, splits, full_name, process_set)
        return output if splits is None else (output, received)
    received = []

    def forward(xs):
        output, received_splits = kernels.alltoall(xs[0], splits, full_name, process_set)
        received.append(received_splits)
        return [output]

    def backward(xs, dys):
        # Every rank sends back what it received from each rank.
        return [kernels.alltoall(dys[0], received[0], _auto("alltoall", dys[0]),
                                 process_set)[0]]
    output = _differentiable(forward, backward, [tensor])[0]
    return output if splits is None else (output, received[0])


def _reducescatter(tensors, prefix, name, compression, op, prescale_factor, postscale_factor,
                   process_set):
    inputs = [tf.convert_to_tensor(t) for t in tensors]
    full_name = bridge.collective_name(prefix, name, inputs[0])

    def forward(xs):
        if len(xs) == 1:
            return [kernels.reducescatter(xs[0], full_name, op, prescale_factor,
                                          postscale_factor, process_set)]
        return kernels.grouped_reducescatter(xs, full_name, op, prescale_factor,
                                             postscale_factor, process_set)

    def backward(xs, dys):
        # Horovod's: scaled by the set's size for Sum, not divided for Average.
        scale = prescale_factor * postscale_factor * (process_set.size() if op == Sum else 1)
        return [_scaled(kernels.allgather(dy, _auto("allgather", dy), process_set), scale)
                for dy in dys]
    return _compressed(compression, inputs,
                       lambda xs: _differentiable(forward, backward, xs))


def grouped_reducescatter(tensors, device_dense='', compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0, name=None, ignore_name_scope=False):
    """reducescatter of a list of tensors as one group; returns a list."""
    if not tensors:
        return tensors
    return _reducescatter(tensors, "grouped_reducescatter", name, compression, op,
                          prescale_factor, postscale_factor, process_set)


def reducescatter(tensor, device_dense='', compression=Compression.none, op=Average, name=None,
                  process_set=global_process_set, ignore_name_scope=False, prescale_factor=1.0,
                  postscale_factor=1.0):
    """Reduces `tensor` (same shape on every rank) with `op` (Average or Sum)
    and returns this rank's share of the first dimension: the first
    (rows % size) ranks get one row more. Differentiable."""
    return _reducescatter([tensor], "reducescatter", name, compression, op, prescale_factor,
                          postscale_factor, process_set)[0]
