"""The collectives on TensorFlow tensors, not differentiable: each *_op()
builds a bridge.Collective (so callers can batch several into one run()),
and the plain functions run one. The differentiable public forms are in
ops.py.

Names: `name` is the collective's full name (see bridge.collective_name).
"""
import tensorflow as tf

from horovodcpp import _core
from horovodcpp.common.basics import Average
from horovodcpp.common.process_sets import global_process_set
from horovodcpp.tensorflow import bridge


def _rest(shape):
    """Static shape with an unknown first dimension (scalars count as one row)."""
    shape = tf.TensorShape(shape)
    if shape.rank is None:
        return shape
    return tf.TensorShape([None]).concatenate(shape[1:])


def allreduce_op(tensor, name, op=Average, prescale_factor=1.0, postscale_factor=1.0):
    def start(inputs):
        (t,) = inputs
        array, out = bridge.output_array(t.shape, t.dtype)
        work = _core.allreduce_async(bridge.core_input(t), out, name, op, prescale_factor,
                                     postscale_factor)
        return bridge.when_done([work], lambda: [bridge.from_array(array, t.dtype)])
    return bridge.Collective([tensor], [tensor.dtype], [tensor.shape], start)


def grouped_allreduce_op(tensors, name, op=Average, prescale_factor=1.0, postscale_factor=1.0):
    def start(inputs):
        arrays, outs = zip(*[bridge.output_array(t.shape, t.dtype) for t in inputs])
        works = _core.grouped_allreduce_async([bridge.core_input(t) for t in inputs], list(outs),
                                              name, op, prescale_factor, postscale_factor)
        return bridge.when_done(works, lambda: [bridge.from_array(a, t.dtype)
                                                for a, t in zip(arrays, inputs)])
    return bridge.Collective(tensors, [t.dtype for t in tensors], [t.shape for t in tensors],
                             start)


def byte_view(tensor):
    """Tensors of dtypes the core lacks (uint32, complex64, ...) travel as
    bytes for the collectives that only move data: (view, restore)."""
    if tensor.dtype in bridge.SUPPORTED_DTYPES:
        return tensor, lambda t: t
    dtype = tensor.dtype
    return tf.bitcast(tensor, tf.uint8), lambda t: tf.bitcast(t, dtype)


def allgather_op(tensor, name):
    def start(inputs):
        (t,) = inputs
        work = _core.allgather_async(bridge.core_input(t, move_only=True), name)
        return lambda: [bridge.from_core(work.output(), t.dtype)]
    return bridge.Collective([tensor], [tensor.dtype], [_rest(tensor.shape)], start)


def grouped_allgather_op(tensors, name):
    def start(inputs):
        works = _core.grouped_allgather_async(
            [bridge.core_input(t, move_only=True) for t in inputs], name)
        return lambda: [bridge.from_core(w.output(), t.dtype) for w, t in zip(works, inputs)]
    return bridge.Collective(tensors, [t.dtype for t in tensors],
                             [_rest(t.shape) for t in tensors], start)


def broadcast_op(tensor, root_rank, name):
    def start(inputs):
        (t,) = inputs
        array, out = bridge.output_array(t.shape, t.dtype, init=t)
        work = _core.broadcast_async(out, root_rank, name)
        return bridge.when_done([work], lambda: [bridge.from_array(array, t.dtype)])
    return bridge.Collective([tensor], [tensor.dtype], [tensor.shape], start)


def alltoall_op(tensor, splits, name):
    """splits: an int tensor of one entry per rank, or None (equal parts).
    Outputs: the received rows and the received splits (int32 without
    splits, else the splits' dtype)."""
    splits_dtype = tf.int32 if splits is None else splits.dtype

    def start(inputs):
        t = inputs[0]
        split_list = [int(s) for s in inputs[1].numpy()] if len(inputs) > 1 else []
        work = _core.alltoall_async(bridge.core_input(t, move_only=True), split_list, name)
        return lambda: [bridge.from_core(work.output(), t.dtype),
                        tf.constant(work.received_splits(), dtype=splits_dtype)]
    inputs = [tensor] if splits is None else [tensor, splits]
    return bridge.Collective(inputs, [tensor.dtype, splits_dtype],
                             [_rest(tensor.shape), tf.TensorShape([_core.size()])], start)


def _wide(t):
    """bfloat16 reducescatters run in float32: NumPy cannot take a bfloat16
    result from the core, and the core sums bfloat16 in float32 anyway."""
    return tf.cast(t, tf.float32) if t.dtype == tf.bfloat16 else t


def _narrow(buffer, dtype):
    result = bridge.from_core(buffer, tf.float32 if dtype == tf.bfloat16 else dtype)
    return tf.cast(result, dtype)


def reducescatter_op(tensor, name, op=Average, prescale_factor=1.0, postscale_factor=1.0):
    return grouped_reducescatter_op([tensor], name, op, prescale_factor, postscale_factor,
                                    grouped=False)


def grouped_reducescatter_op(tensors, name, op=Average, prescale_factor=1.0,
                             postscale_factor=1.0, grouped=True):
    def start(inputs):
        core_inputs = [bridge.core_input(_wide(t)) for t in inputs]
        if grouped:
            works = _core.grouped_reducescatter_async(core_inputs, name, op, prescale_factor,
                                                      postscale_factor)
        else:
            works = [_core.reducescatter_async(core_inputs[0], name, op, prescale_factor,
                                               postscale_factor)]
        return lambda: [_narrow(w.output(), t.dtype) for w, t in zip(works, inputs)]
    return bridge.Collective(tensors, [t.dtype for t in tensors],
                             [_rest(t.shape) for t in tensors], start)


def run_one(collective):
    """Runs one collective; returns its outputs (a list)."""
    return bridge.run([collective])[0]


def allreduce(tensor, name=None, op=Average, prescale_factor=1.0, postscale_factor=1.0):
    name = bridge.collective_name("allreduce", name, tensor)
    return run_one(allreduce_op(tensor, name, op, prescale_factor, postscale_factor))[0]


def allgather(tensor, name=None):
    name = bridge.collective_name("allgather", name, tensor)
    view, restore = byte_view(tensor)
    return restore(run_one(allgather_op(view, name))[0])


def broadcast(tensor, root_rank, name=None):
    name = bridge.collective_name("broadcast", name, tensor)
    view, restore = byte_view(tensor)
    return restore(run_one(broadcast_op(view, root_rank, name))[0])


def alltoall(tensor, splits=None, name=None):
    """Returns (rows received, received splits)."""
    name = bridge.collective_name("alltoall", name, tensor)
    view, restore = byte_view(tensor)
    output, received = run_one(alltoall_op(view, splits, name))
    return restore(output), received


def _no_input_op(fn, out_dtypes, out_shapes):
    """A collective without tensors (join, barrier) as a Collective."""
    def start(_):
        result = fn()
        return lambda: [tf.constant(result, dtype=d) for d in out_dtypes]
    return bridge.Collective([], out_dtypes, out_shapes, start)


def join():
    """For uneven numbers of batches: this rank has run out of data. It
    waits until every rank has joined; meanwhile its Sum/Average allreduces
    contribute zeros to the other ranks'. Returns the last rank to join
    (an int32 scalar tensor)."""
    return run_one(_no_input_op(_core.join, [tf.int32], [tf.TensorShape([])]))[0]


def barrier(process_set=global_process_set):
    """Returns once every rank has called barrier()."""
    bridge.check_process_set(process_set)
    run_one(_no_input_op(lambda: _core.barrier() or 0, [tf.int32], [tf.TensorShape([])]))
