"""horovodcpp.tensorflow.keras: the API of horovod.tensorflow.keras for
Keras 3 with the TensorFlow backend (tf.keras since TensorFlow 2.16).

    import horovodcpp.tensorflow.keras as hvd
    hvd.init()
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.01 * hvd.size())),
                  loss=...)
    model.fit(x, y, callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0),
                               hvd.callbacks.MetricAverageCallback()])

The compiled train step must not use XLA (compile(jit_compile=False), the
default on CPU-only machines): XLA cannot compile horovodcpp's ops.
"""
import tensorflow as tf

from horovodcpp.tensorflow import (  # noqa: F401
    Average, BackendError, Compression, HorovodInternalError, HorovodTimeoutError,
    InvalidArgumentError, Max, Min, MismatchError, Product, ProcessSet, RankFailureError, Sum,
    add_process_set, allgather_object, barrier, broadcast_object, ccl_built, cross_rank,
    cross_size, cuda_built, ddl_built, global_process_set, gloo_built, gloo_enabled, init,
    is_homogeneous, is_initialized, join, local_rank, local_size, mpi_built, mpi_enabled,
    mpi_threads_supported, nccl_built, rank, remove_process_set, rocm_built, shutdown, size,
    start_timeline, stop_timeline)
from horovodcpp.tensorflow import collectives as _collectives
from horovodcpp.tensorflow.functions import broadcast_global_variables  # noqa: F401
from horovodcpp.tensorflow.keras import callbacks, elastic  # noqa: F401
from horovodcpp.tensorflow.keras.optimizer import (  # noqa: F401
    DistributedOptimizer, PartialDistributedOptimizer, load_model)


def allreduce(value, name=None, average=None, prescale_factor=1.0, postscale_factor=1.0, op=None,
              compression=Compression.none):
    """Allreduce of a tensor-like value (eagerly: returns a tensor)."""
    return _collectives.allreduce(tf.convert_to_tensor(value), average=average, compression=compression,
                          op=op, prescale_factor=prescale_factor,
                          postscale_factor=postscale_factor, name=name)


def allgather(value, name=None):
    """Allgather of a tensor-like value along its first dimension."""
    return _collectives.allgather(tf.convert_to_tensor(value), name=name)


def broadcast(value, root_rank, name=None):
    """root_rank's tensor-like value, on every rank."""
    return _collectives.broadcast(tf.convert_to_tensor(value), root_rank, name=name)


def reducescatter(value, name=None, op=Average):
    """Reducescatter of a tensor-like value: this rank's share of the rows."""
    return _collectives.reducescatter(tf.convert_to_tensor(value), op=op, name=name)
