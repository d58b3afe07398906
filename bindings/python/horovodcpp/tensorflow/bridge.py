"""How horovodcpp collectives run on TensorFlow tensors, eagerly and inside
tf.function: as asynchronous TensorFlow ops of horovodcpp's own
(_tf_ops.so, built from bindings/python/tensorflow_ops on TensorFlow's
stable C API), which submit to the core and return, so that no inter-op
thread waits; an eager batch of collectives runs as one cached tf.function
(as_graph()). Names identify a tensor across ranks: eagerly the core's
automatic ones, in a graph names fixed at trace time and made unique like
the graph's op names. Why, and the errors they raise: docs/tensorflow.md,
"How it works".
"""
import ctypes
import os
import re

import tensorflow as tf

from horovodcpp.common import process_sets as _process_sets


def _load_ops():
    # TensorFlow's own import makes its C API global today; this makes sure,
    # since the library's TF_* symbols resolve against it.
    framework = os.path.join(tf.sysconfig.get_lib(), "libtensorflow_framework.so.2")
    if os.path.exists(framework):
        ctypes.CDLL(framework, mode=ctypes.RTLD_GLOBAL)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_tf_ops.so")
    try:
        return tf.load_op_library(path)
    except (tf.errors.NotFoundError, OSError) as e:
        raise ImportError(
            "horovodcpp.tensorflow cannot load its TensorFlow ops {} into TensorFlow {}: {} "
            "(they need the C API's asynchronous kernels, TF_NewAsyncKernelBuilder)".format(
                path, tf.__version__, e)) from e


OPS = _load_ops()

# What the core reduces natively, by TensorFlow dtype (the ops' type lists).
SUPPORTED_DTYPES = (tf.uint8, tf.int8, tf.uint16, tf.int16, tf.int32, tf.int64, tf.float16,
                    tf.bfloat16, tf.float32, tf.float64, tf.bool)


def check_dtype(dtype):
    if dtype not in SUPPORTED_DTYPES:
        raise TypeError("horovodcpp does not support tensors of dtype {} (supported: {})".format(
            dtype.name, ", ".join(d.name for d in SUPPORTED_DTYPES)))


def set_id(process_set):
    """The id the ops take for `process_set` (ValueError if it is not
    registered)."""
    _process_sets.core_set(process_set)
    return process_set.process_set_id


def collective_name(prefix, name, tensor=None):
    """The name a collective is submitted under (see the module docstring):
    "<prefix>.<name>", made unique in a graph as TensorFlow makes node
    names unique (the same on every rank that traced the same function)."""
    if tf.executing_eagerly():
        return "" if name is None else "{}.{}".format(prefix, name)
    graph = tf.compat.v1.get_default_graph()
    if name is not None:
        return "{}.{}".format(prefix, graph.unique_name(name))
    base = "Horovod{}".format(prefix[:1].upper() + prefix[1:])
    if tensor is not None:
        base += "_" + re.sub("[^a-zA-Z0-9_]", "_", tensor.name)
    return graph.unique_name(base)


_graphs = {}


def as_graph(key, fn, *args):
    """fn(*args) with its collectives running at once: inline inside a
    graph; eagerly, as a tf.function cached under `key`, which must
    determine what fn does (its tensors' shapes may vary: TensorFlow traces
    again)."""
    if not tf.executing_eagerly():
        return fn(*args)
    graph = _graphs.get(key)
    if graph is None:
        graph = _graphs[key] = tf.function(fn, autograph=False)
    return graph(*args)
