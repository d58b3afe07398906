"""horovodcpp.keras: the API of horovod.keras. With Keras 3 on the
TensorFlow backend this is horovodcpp.tensorflow.keras under Horovod's other
name, with horovod.keras's own signatures where they differ: allreduce
averages by default (average=True), and DistributedOptimizer and
PartialDistributedOptimizer take horovod.keras's positional order."""
from horovodcpp.tensorflow.keras import *  # noqa: F401,F403
from horovodcpp.tensorflow.keras import Average, Compression, global_process_set
from horovodcpp.tensorflow.keras import allreduce as _allreduce
from horovodcpp.tensorflow.keras import optimizer as _optimizer
from horovodcpp.tensorflow import Adasum, mpi_threads_supported  # noqa: F401


def allreduce(value, name=None, average=True, prescale_factor=1.0, postscale_factor=1.0,
              op=None, compression=Compression.none):
    """Allreduce of a tensor-like value; average=True as in horovod.keras
    (give average=None with op=...)."""
    return _allreduce(value, name=name, average=average, prescale_factor=prescale_factor,
                      postscale_factor=postscale_factor, op=op, compression=compression)


def DistributedOptimizer(optimizer, name=None, device_dense='', device_sparse='',
                         compression=Compression.none, sparse_as_dense=False,
                         gradient_predivide_factor=1.0, op=Average, num_groups=0, groups=None):
    """horovodcpp.tensorflow.keras.DistributedOptimizer with horovod.keras's
    parameters (no backward_passes_per_step here, as in Horovod)."""
    return _optimizer.DistributedOptimizer(
        optimizer, name=name, device_dense=device_dense, device_sparse=device_sparse,
        compression=compression, sparse_as_dense=sparse_as_dense,
        gradient_predivide_factor=gradient_predivide_factor, op=op, num_groups=num_groups,
        groups=groups)


def PartialDistributedOptimizer(optimizer, name=None, device_dense='', device_sparse='',
                                compression=Compression.none, sparse_as_dense=False,
                                gradient_predivide_factor=1.0, op=Average, groups=None,
                                process_set=global_process_set, local_layers=None,
                                scale_local_gradients=True):
    """horovodcpp.tensorflow.keras.PartialDistributedOptimizer with
    horovod.keras's parameters."""
    return _optimizer.PartialDistributedOptimizer(
        optimizer, name=name, device_dense=device_dense, device_sparse=device_sparse,
        compression=compression, sparse_as_dense=sparse_as_dense,
        gradient_predivide_factor=gradient_predivide_factor, op=op, groups=groups,
        process_set=process_set, local_layers=local_layers,
        scale_local_gradients=scale_local_gradients)
