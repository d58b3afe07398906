"""Helpers of horovod.tensorflow for starting training consistently:
broadcast_variables, broadcast_, broadcast_global_variables,
broadcast_object and allgather_object."""
import tensorflow as tf

from horovodcpp.common import objects
from horovodcpp.common.process_sets import global_process_set
from horovodcpp.tensorflow import bridge, mpi_ops


def broadcast_variables(variables, root_rank, process_set=global_process_set, inplace=False):
    """Assigns root_rank's values to `variables` (tf.Variable or Keras
    variables, the same list on every rank), in one batched operation.
    Variables of dtypes the core lacks (e.g. uint32 seed states) travel as
    bytes. Returns None (a grouped op in a TF1-style graph). `inplace` is
    accepted for Horovod's signature."""
    bridge.check_process_set(process_set)
    variables = list(variables)
    if not variables:
        return None
    collectives, restores = [], []
    for i, variable in enumerate(variables):
        view, restore = mpi_ops.byte_view(tf.convert_to_tensor(variable))
        # By position: variable names may differ between ranks.
        name = bridge.collective_name("broadcast", "variables.{}".format(i))
        collectives.append(mpi_ops.broadcast_op(view, root_rank, name))
        restores.append(restore)
    results = bridge.run(collectives)
    assigns = [v.assign(restore(r[0])) for v, restore, r in zip(variables, restores, results)]
    # An op to run only in a TF1-style graph; tf.function runs the assigns anyway.
    return None if tf.executing_eagerly() or tf.inside_function() else tf.group(*assigns)


def broadcast_(variables, root_rank, name=None, process_set=global_process_set):
    """In-place broadcast of `variables` from root_rank; returns their new
    values."""
    broadcast_variables(variables, root_rank, process_set)
    return [tf.convert_to_tensor(v) for v in variables]


def broadcast_global_variables(root_rank):
    """Broadcasts tf.compat.v1.global_variables() from root_rank (graph mode
    only, as in Horovod: TensorFlow 2 has no global variable collection)."""
    if tf.executing_eagerly():
        raise RuntimeError(
            "hvd.broadcast_global_variables() does not support eager execution. "
            "Please use `hvd.broadcast_variables(<model/optimizer variables>)` instead.")
    return broadcast_variables(tf.compat.v1.global_variables(), root_rank)


def broadcast_object(obj, root_rank=0, session=None, name=None, process_set=global_process_set):
    """Returns root_rank's `obj` (any picklable object) on every rank.
    Eager only; `session` is accepted for Horovod's signature."""
    bridge.check_process_set(process_set)
    return objects.broadcast_object(obj, root_rank, name)


def allgather_object(obj, session=None, name=None, process_set=global_process_set):
    """Returns the list of every rank's `obj` (picklable), in rank order."""
    bridge.check_process_set(process_set)
    return objects.allgather_object(obj, name)
