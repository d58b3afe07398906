"""How horovodcpp collectives run on TensorFlow tensors, eagerly and inside
tf.function.

Eagerly, tensors go to horovodcpp._core directly: inputs through DLPack
(no copy), results through NumPy into new tensors (a copy: TensorFlow
kernels need 64-byte aligned memory, which a DLPack import would not
guarantee).

In a graph (tf.function, Keras' compiled train step) the same Python code
runs inside a tf.py_function op. Why py_function and not a custom C++ op: a
TensorFlow op must be compiled against the installed TensorFlow's C++ ABI
(Horovod rebuilds for each version); py_function needs only the Python API,
so the one _core extension serves every TensorFlow version. Why it cannot
deadlock although the op blocks until the collective is done: tf.function
runs stateful ops (py_function is one) in program order, so every rank
submits its collectives in the same order. The price is a Python call per
op, so callers batch: run() takes several collectives, submits them all,
then waits, in one op (a whole gradient list is one op). Errors raised in
the op reach the caller as tf.errors (the message names the tensor). XLA
(jit_compile=True) cannot compile py_function.

Names identify a tensor across ranks. Eagerly, unnamed collectives get the
core's automatic names (they match because every rank issues them in the
same order). In a graph, names are fixed at trace time from the graph's
unique op names, which are the same on every rank that traced the same
function.
"""
import re

import numpy as np
import tensorflow as tf

from horovodcpp.common import process_sets as _process_sets

# What the core reduces natively, by TensorFlow dtype (the names are the
# core's dtype names too).
SUPPORTED_DTYPES = (tf.uint8, tf.int8, tf.uint16, tf.int16, tf.int32, tf.int64, tf.float16,
                    tf.bfloat16, tf.float32, tf.float64, tf.bool)
# How a result is held in NumPy before it becomes a tensor: NumPy cannot
# export bool or bfloat16 through DLPack, so those travel as same-size ints.
_STORAGE = {tf.bool: np.uint8, tf.bfloat16: np.uint16}


def check_dtype(dtype):
    if dtype not in SUPPORTED_DTYPES:
        raise ValueError("horovodcpp does not support tensors of dtype {} (supported: {})".format(
            dtype.name, ", ".join(d.name for d in SUPPORTED_DTYPES)))


def check_process_set(process_set):
    """Only the global process set runs here for now (horovodcpp.torch has
    the others): anything else raises NotImplementedError."""
    if process_set is None or process_set is _process_sets.global_process_set:
        return
    if getattr(process_set, "process_set_id", None) == 0:
        return
    raise NotImplementedError(
        "horovodcpp.tensorflow runs on the global process set only (process sets other "
        "than the global one are available in horovodcpp.torch)")


def core_input(tensor, move_only=False):
    """What _core reads for an eager tensor: (DLPack tensor, dtype name).
    move_only (allgather, alltoall): the bits travel as the storage dtype, so
    that the result comes back through NumPy."""
    check_dtype(tensor.dtype)
    dtype_name = tensor.dtype.name
    if tensor.dtype == tf.bool:
        tensor = tf.cast(tensor, tf.uint8)
    if move_only and tensor.dtype in _STORAGE:
        dtype_name = np.dtype(_STORAGE[tensor.dtype]).name
    return (tensor, dtype_name)


def output_array(shape, dtype, init=None):
    """A NumPy array for _core to write a result of `dtype` into, and what
    _core takes for it. `init`: an eager tensor whose value to start from."""
    check_dtype(dtype)
    storage = _STORAGE.get(dtype, dtype.as_numpy_dtype)
    if init is None:
        array = np.empty(shape, dtype=storage)
    else:
        array = np.array(init.numpy()).view(storage)  # a writable copy
    return array, (array, dtype.name)


def from_array(array, dtype):
    """The tensor of `dtype` holding a NumPy array from output_array()."""
    tensor = tf.convert_to_tensor(array)
    if dtype == tf.bool:
        return tf.cast(tensor, tf.bool)
    if dtype == tf.bfloat16:
        return tf.bitcast(tensor, tf.bfloat16)
    return tensor


def from_core(buffer, dtype):
    """The tensor of `dtype` holding a result the core allocated (a
    _core.Buffer of the storage dtype)."""
    return from_array(np.from_dlpack(buffer), dtype)


def collective_name(prefix, name, tensor=None):
    """The name a collective is submitted under (see the module docstring)."""
    if name is not None:
        return "{}.{}".format(prefix, name)
    if tf.executing_eagerly():
        return ""  # the core's automatic name
    base = "Horovod{}".format(prefix[:1].upper() + prefix[1:])
    if tensor is not None:
        base += "_" + re.sub("[^a-zA-Z0-9_]", "_", tensor.name)
    return tf.compat.v1.get_default_graph().unique_name(base)


def when_done(works, outputs):
    """A Collective's finish function: waits for the _core.Work objects
    `works` (raising their error), then returns outputs()."""
    def finish():
        for work in works:
            work.wait()
        return outputs()
    return finish


class Collective:
    """One operation of a run(): its input tensors, its outputs' dtypes and
    static shapes (known when tracing), and start(eager inputs), which
    submits it to the core and returns a function that waits and returns
    the outputs as eager tensors."""

    def __init__(self, inputs, out_dtypes, out_shapes, start):
        self.inputs = list(inputs)
        self.out_dtypes = list(out_dtypes)
        self.out_shapes = list(out_shapes)
        self.start = start


def run(collectives):
    """Runs the collectives (all submitted before any is waited for) and
    returns each one's list of outputs."""
    if tf.executing_eagerly():
        finishes = [c.start(c.inputs) for c in collectives]
        return [finish() for finish in finishes]

    def body(*eager_inputs):
        finishes, offset = [], 0
        for c in collectives:
            finishes.append(c.start(list(eager_inputs[offset:offset + len(c.inputs)])))
            offset += len(c.inputs)
        return [output for finish in finishes for output in finish()]

    flat_inputs = [t for c in collectives for t in c.inputs]
    flat_dtypes = [d for c in collectives for d in c.out_dtypes]
    flat_outputs = tf.py_function(body, flat_inputs, flat_dtypes, name="Horovod")
    if not isinstance(flat_outputs, (list, tuple)):
        flat_outputs = [flat_outputs]
    results, offset = [], 0
    for c in collectives:
        outputs = list(flat_outputs[offset:offset + len(c.out_dtypes)])
        offset += len(c.out_dtypes)
        for output, shape in zip(outputs, c.out_shapes):
            output.set_shape(shape)
        results.append(outputs)
    return results
