"""The collectives on TensorFlow tensors as single ops, not differentiable
(the differentiable public forms are in collectives.py), and the topology ops.

`name` is the collective's full name (see bridge.collective_name);
`process_set` a registered ProcessSet. Tensors of dtypes the core lacks
(uint32, complex64, ...) travel as bytes in the collectives that only move
data (allgather, broadcast, alltoall).
"""
import tensorflow as tf

from horovodcpp.common.basics import Average
from horovodcpp.common.process_sets import global_process_set
from horovodcpp.tensorflow import bridge

OPS = bridge.OPS


def _rest(shape):
    """Static shape with an unknown first dimension (scalars count as one row)."""
    shape = tf.TensorShape(shape)
    if shape.rank is None:
        return shape
    return tf.TensorShape([None]).concatenate(shape[1:])


def _checked(tensors):
    tensors = [tf.convert_to_tensor(t) for t in tensors]
    for t in tensors:
        bridge.check_dtype(t.dtype)
    return tensors


def _reduction_attrs(name, op, prescale_factor, postscale_factor, process_set):
    return dict(tensor_name=name, reduce_op=int(op), prescale_factor=prescale_factor,
                postscale_factor=postscale_factor, process_set_id=bridge.set_id(process_set))


def allreduce(tensor, name, op=Average, prescale_factor=1.0, postscale_factor=1.0,
              process_set=global_process_set):
    (tensor,) = _checked([tensor])
    return OPS.horovodcpp_allreduce(tensor, **_reduction_attrs(
        name, op, prescale_factor, postscale_factor, process_set))


def grouped_allreduce(tensors, name, op=Average, prescale_factor=1.0, postscale_factor=1.0,
                      process_set=global_process_set):
    """One group: negotiated together, fused into as few backend calls as
    possible (dtypes may differ)."""
    return list(OPS.horovodcpp_grouped_allreduce(_checked(tensors), **_reduction_attrs(
        name, op, prescale_factor, postscale_factor, process_set)))


def _byte_view(tensor):
    """(view, restore): a tensor of a dtype the core lacks as uint8 rows
    (scalars as one row), and how to turn a result back."""
    if tensor.dtype in bridge.SUPPORTED_DTYPES:
        return tensor, lambda t: t
    dtype = tensor.dtype
    rows = tensor if tensor.shape.rank != 0 else tensor[None]
    return tf.bitcast(rows, tf.uint8), lambda t: tf.bitcast(t, dtype)


def _with_shape(tensor, shape):
    tensor.set_shape(shape)
    return tensor


def allgather(tensor, name, process_set=global_process_set):
    tensor = tf.convert_to_tensor(tensor)
    view, restore = _byte_view(tensor)
    output = OPS.horovodcpp_allgather(view, tensor_name=name,
                                      process_set_id=bridge.set_id(process_set))
    return _with_shape(restore(output), _rest(tensor.shape))


def grouped_allgather(tensors, name, process_set=global_process_set):
    tensors = _checked(tensors)
    outputs = OPS.horovodcpp_grouped_allgather(tensors, tensor_name=name,
                                               process_set_id=bridge.set_id(process_set))
    return [_with_shape(o, _rest(t.shape)) for o, t in zip(outputs, tensors)]


def broadcast(tensor, root_rank, name, process_set=global_process_set):
    tensor = tf.convert_to_tensor(tensor)
    view, restore = _byte_view(tensor)
    output = OPS.horovodcpp_broadcast(view, tensor_name=name, root_rank=root_rank,
                                      process_set_id=bridge.set_id(process_set))
    return _with_shape(tf.reshape(restore(output), tf.shape(tensor)), tensor.shape)


def alltoall(tensor, splits, name, process_set=global_process_set):
    """splits: an int tensor of one entry per rank of the set, or None (equal
    parts). Returns the received rows and the received splits (int32
    without splits, else the splits' dtype)."""
    tensor = tf.convert_to_tensor(tensor)
    splits = tf.constant([], tf.int32) if splits is None else tf.convert_to_tensor(splits)
    view, restore = _byte_view(tensor)
    output, received = OPS.horovodcpp_alltoall(view, splits, tensor_name=name,
                                               process_set_id=bridge.set_id(process_set))
    return _with_shape(restore(output), _rest(tensor.shape)), received


def reducescatter(tensor, name, op=Average, prescale_factor=1.0, postscale_factor=1.0,
                  process_set=global_process_set):
    (tensor,) = _checked([tensor])
    output = OPS.horovodcpp_reducescatter(tensor, **_reduction_attrs(
        name, op, prescale_factor, postscale_factor, process_set))
    return _with_shape(output, _rest(tensor.shape))


def grouped_reducescatter(tensors, name, op=Average, prescale_factor=1.0, postscale_factor=1.0,
                          process_set=global_process_set):
    tensors = _checked(tensors)
    outputs = OPS.horovodcpp_grouped_reducescatter(tensors, **_reduction_attrs(
        name, op, prescale_factor, postscale_factor, process_set))
    return [_with_shape(o, _rest(t.shape)) for o, t in zip(outputs, tensors)]


def join():
    """For uneven numbers of batches: this rank has run out of data. It
    waits until every rank has joined; meanwhile its Sum/Average allreduces
    contribute zeros to the other ranks'. Returns the last rank to join
    (an int32 scalar tensor)."""
    return OPS.horovodcpp_join()


def barrier(process_set=global_process_set):
    """Returns once every rank of `process_set` has called barrier()."""
    OPS.horovodcpp_barrier(process_set_id=bridge.set_id(process_set))


def size_op(process_set_id=0, name=None):
    """An op giving the number of ranks (of the process set with this id)
    when the graph runs, not when it is built."""
    return OPS.horovodcpp_size(process_set_id=process_set_id, name=name)


def process_set_included_op(process_set_id=0, name=None):
    """An op giving 1 if this rank is in the process set with this id, 0 if
    not, -1 before init() and -3 for an unknown set (Horovod's codes)."""
    return OPS.horovodcpp_process_set_included(process_set_id=process_set_id, name=name)


def rank_op(name=None):
    """An op giving this process's rank when the graph runs."""
    return OPS.horovodcpp_rank(name=name)


def local_rank_op(name=None):
    """An op giving this process's rank on its host when the graph runs."""
    return OPS.horovodcpp_local_rank(name=name)


def local_size_op(name=None):
    """An op giving the number of ranks on this host when the graph runs."""
    return OPS.horovodcpp_local_size(name=name)
