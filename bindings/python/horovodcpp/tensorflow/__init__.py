"""horovodcpp.tensorflow: the API of horovod.tensorflow on horovodcpp's C++
core, eagerly and inside tf.function.

    import horovodcpp.tensorflow as hvd
    hvd.init()
    with tf.GradientTape() as tape:
        loss = ...
    tape = hvd.DistributedGradientTape(tape)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    if first_batch:
        hvd.broadcast_variables(model.variables, root_rank=0)
        hvd.broadcast_variables(optimizer.variables, root_rank=0)

Keras: horovodcpp.tensorflow.keras. No custom TensorFlow op is compiled
(see bridge.py), so one build serves every TensorFlow version; the graph
path cannot be compiled with XLA. Not supported yet (NotImplementedError):
process sets other than the global one, init(comm=...),
backward_passes_per_step > 1. There is no Adasum.
"""
from horovodcpp.common.basics import (  # noqa: F401
    Average, BackendError, HorovodInternalError, HorovodTimeoutError, InvalidArgumentError, Max,
    Min, MismatchError, Product, RankFailureError, Sum, ccl_built, cross_rank, cross_size,
    cuda_built, ddl_built, gloo_built, gloo_enabled, init, is_homogeneous, is_initialized,
    local_rank, local_size, mpi_built, mpi_enabled, nccl_built, rank, rocm_built, shutdown, size,
    start_timeline, stop_timeline)
from horovodcpp.common.process_sets import (  # noqa: F401
    ProcessSet, add_process_set, global_process_set, remove_process_set)
from horovodcpp.tensorflow import elastic  # noqa: F401  (hvd.elastic.run, ...)
from horovodcpp.tensorflow.compression import Compression  # noqa: F401
from horovodcpp.tensorflow.functions import (  # noqa: F401
    allgather_object, broadcast_, broadcast_global_variables, broadcast_object,
    broadcast_variables)
from horovodcpp.tensorflow.gradient_tape import DistributedGradientTape  # noqa: F401
from horovodcpp.tensorflow.mpi_ops import barrier, join  # noqa: F401
from horovodcpp.tensorflow.ops import (  # noqa: F401
    allgather, allreduce, alltoall, broadcast, grouped_allgather, grouped_allreduce,
    grouped_reducescatter, reducescatter)
from horovodcpp.tensorflow.optimizer import DistributedOptimizer  # noqa: F401
