"""Helpers of horovod.tensorflow for starting training consistently:
broadcast_variables, broadcast_, broadcast_global_variables,
broadcast_object, broadcast_object_fn and allgather_object."""
import functools
import pickle

import numpy as np
import tensorflow as tf

from horovodcpp import _core
from horovodcpp.common.process_sets import global_process_set
from horovodcpp.tensorflow import bridge, kernels


def _broadcast_values(root_rank, process_set, values):
    # Named by position: variable names may differ between ranks.
    return [kernels.broadcast(v, root_rank,
                              bridge.collective_name("broadcast", "variables.{}".format(i)),
                              process_set) for i, v in enumerate(values)]


def broadcast_variables(variables, root_rank, process_set=global_process_set, inplace=False):
    """Assigns root_rank's values to `variables` (tf.Variable or Keras
    variables, the same list on every rank of `process_set`; root_rank is a
    global rank). Variables of dtypes the core lacks (e.g. uint32 seed
    states) travel as bytes. Returns None (a grouped op in a TF1-style
    graph). `inplace` is accepted for Horovod's signature."""
    variables = list(variables)
    if not variables:
        return None
    values = bridge.as_graph(("broadcast_variables", root_rank, process_set),
                             functools.partial(_broadcast_values, root_rank, process_set),
                             [tf.convert_to_tensor(v) for v in variables])
    assigns = [v.assign(value) for v, value in zip(variables, values)]
    # An op to run only in a TF1-style graph; tf.function runs the assigns anyway.
    return None if tf.executing_eagerly() or tf.inside_function() else tf.group(*assigns)


def broadcast_(variables, root_rank, name=None, process_set=global_process_set):
    """In-place broadcast of `variables` from root_rank; returns their new
    values (in a TF1-style graph, read after the assignments)."""
    variables = list(variables)
    assigned = broadcast_variables(variables, root_rank, process_set)
    if assigned is None:  # eagerly, or in a tf.function, which orders the reads itself
        return [tf.convert_to_tensor(v) for v in variables]
    with tf.control_dependencies([assigned]):
        return [v.read_value() for v in variables]


def broadcast_global_variables(root_rank):
    """Broadcasts tf.compat.v1.global_variables() from root_rank (graph mode
    only, as in Horovod: TensorFlow 2 has no global variable collection)."""
    if tf.executing_eagerly():
        raise RuntimeError(
            "hvd.broadcast_global_variables() does not support eager execution. "
            "Please use `hvd.broadcast_variables(<model/optimizer variables>)` instead.")
    return broadcast_variables(tf.compat.v1.global_variables(), root_rank)


class BroadcastGlobalVariablesHook(tf.compat.v1.train.SessionRunHook):
    """TensorFlow 1 sessions (tf.compat.v1): broadcasts the global variables
    from root_rank once the session is created (e.g. from a checkpoint
    restored on rank 0). `device` is accepted as in Horovod; the broadcast
    runs where the variables are."""

    def __init__(self, root_rank, device=""):
        super().__init__()
        self.root_rank = root_rank
        self.device = device
        self.bcast_op = None

    def begin(self):
        graph = tf.compat.v1.get_default_graph()
        if self.bcast_op is None or self.bcast_op.graph is not graph:
            self.bcast_op = broadcast_global_variables(self.root_rank)

    def after_create_session(self, session, coord):
        session.run(self.bcast_op)


def _value(tensor, session, what):
    """The tensor's value (NumPy): eagerly, or in graph mode run in
    `session`, else the default session, as Horovod does."""
    if tf.executing_eagerly():
        return tensor.numpy()
    session = session or tf.compat.v1.get_default_session()
    if session is None:
        raise RuntimeError(
            "hvd.{} in graph mode runs its collectives in a session: pass session=, or call it "
            "inside `with session.as_default():`".format(what))
    return session.run(tensor)


def _payload(obj):
    return tf.constant(np.frombuffer(pickle.dumps(obj), dtype=np.uint8))


def broadcast_object(obj, root_rank=0, session=None, name=None, process_set=global_process_set):
    """Returns root_rank's `obj` (any picklable object) on every rank of
    `process_set` (root_rank is a global rank). In graph mode the
    collectives run in `session` (default: the default session)."""
    name = name or type(obj).__name__
    is_root = _core.rank() == root_rank
    payload = _payload(obj) if is_root else None
    length = tf.constant([int(payload.shape[0]) if is_root else 0], tf.int64)
    length = kernels.broadcast(length, root_rank, bridge.collective_name("broadcast", name + ".sz"),
                               process_set)
    length = _value(length, session, "broadcast_object")
    if not is_root:
        payload = tf.zeros([int(length[0])], tf.uint8)
    data = kernels.broadcast(payload, root_rank, bridge.collective_name("broadcast", name + ".t"),
                             process_set)
    data = _value(data, session, "broadcast_object")
    return obj if is_root else pickle.loads(data.tobytes())


def broadcast_object_fn(root_rank=0, session=None, name=None, process_set=global_process_set):
    """A function obj -> root_rank's obj (see broadcast_object), for
    broadcasting several objects the same way."""
    name = name or "broadcast_object_fn"
    return functools.partial(broadcast_object, root_rank=root_rank, session=session, name=name,
                             process_set=process_set)


def allgather_object(obj, session=None, name=None, process_set=global_process_set):
    """Returns the list of every rank's `obj` (picklable), in rank order (the
    members of `process_set`). In graph mode the collectives run in
    `session` (default: the default session)."""
    name = name or type(obj).__name__
    payload = _payload(obj)
    lengths = kernels.allgather(tf.constant([int(payload.shape[0])], tf.int64),
                                bridge.collective_name("allgather", name + ".sz"), process_set)
    data = kernels.allgather(payload, bridge.collective_name("allgather", name + ".t"),
                             process_set)
    lengths, data = (_value(t, session, "allgather_object") for t in (lengths, data))
    data = data.tobytes()
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return [pickle.loads(data[offsets[i]:offsets[i + 1]]) for i in range(len(offsets) - 1)]
