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

Keras: horovodcpp.tensorflow.keras. The collectives are TensorFlow ops
built on TensorFlow's stable C API (see bridge.py), so one build serves
every TensorFlow version that has it; they cannot be compiled with XLA.
op=hvd.Adasum works in allreduce (not differentiable) and
DistributedGradientTape. Differences from Horovod: see docs/tensorflow.md.
"""
# TensorFlow before horovodcpp._core, for the reason given in
# horovodcpp/torch/__init__.py (tensorflow[and-cuda] bundles NCCL too).
import tensorflow  # noqa: F401
from horovodcpp.common.basics import *  # noqa: F401,F403  (basics.__all__)
from horovodcpp.common.process_sets import *  # noqa: F401,F403  (ProcessSet, add_process_set, ...)
from horovodcpp.common.util import check_extension, split_list  # noqa: F401
from horovodcpp.common.util import num_rank_is_power_2 as check_num_rank_power_of_2  # noqa: F401
from horovodcpp.common.util import resolve_op as handle_average_backwards_compatibility  # noqa
from horovodcpp.tensorflow import elastic  # noqa: F401  (hvd.elastic.run, ...)
from horovodcpp.tensorflow.compression import Compression  # noqa: F401
from horovodcpp.tensorflow.functions import (  # noqa: F401
    BroadcastGlobalVariablesHook, allgather_object, broadcast_, broadcast_global_variables,
    broadcast_object, broadcast_object_fn, broadcast_variables)
from horovodcpp.tensorflow.gradient_tape import (  # noqa: F401
    DistributedGradientTape, PartialDistributedGradientTape)
from horovodcpp.tensorflow.mpi_ops import gpu_available  # noqa: F401
from horovodcpp.tensorflow.kernels import (  # noqa: F401
    barrier, join, local_rank_op, local_size_op, process_set_included_op, rank_op, size_op)
from horovodcpp.tensorflow.collectives import (  # noqa: F401
    allgather, allreduce, alltoall, broadcast, grouped_allgather, grouped_allreduce,
    grouped_reducescatter, reducescatter)
from horovodcpp.tensorflow.optimizer import DistributedOptimizer  # noqa: F401
from horovodcpp.tensorflow.sync_batch_norm import SyncBatchNormalization  # noqa: F401
from horovodcpp.tensorflow.util import _executing_eagerly, refs_to_vars, vars_to_refs  # noqa

