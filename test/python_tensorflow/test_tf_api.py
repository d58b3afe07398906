"""The public names of horovod.tensorflow, horovod.tensorflow.keras,
horovod.keras and their callbacks (Horovod 0.28.1) exist here, so that a
Horovod script runs after changing its imports. Left out on purpose (see
docs/tensorflow.md): elastic, LocalGradientAggregationHelper and
BroadcastGlobalVariablesHook."""
import pytest

import horovodcpp.keras
import horovodcpp.tensorflow
import horovodcpp.tensorflow.keras

BASICS = [
    "init", "shutdown", "is_initialized", "start_timeline", "stop_timeline", "size", "local_size",
    "cross_size", "rank", "local_rank", "cross_rank", "mpi_enabled", "mpi_built", "gloo_enabled",
    "gloo_built", "nccl_built", "ddl_built", "ccl_built", "cuda_built", "rocm_built", "ProcessSet",
    "global_process_set", "add_process_set", "remove_process_set", "Average", "Sum",
    "Compression"]

TENSORFLOW = BASICS + [
    "allgather_object", "broadcast_object", "broadcast_object_fn", "broadcast_variables",
    "allgather", "grouped_allgather", "broadcast", "broadcast_", "alltoall", "is_homogeneous",
    "rank_op", "local_rank_op", "size_op", "local_size_op", "process_set_included_op", "Min", "Max",
    "Product", "handle_average_backwards_compatibility", "join", "SyncBatchNormalization",
    "allreduce", "reducescatter", "grouped_allreduce", "grouped_reducescatter",
    "broadcast_global_variables", "DistributedOptimizer", "DistributedGradientTape",
    "PartialDistributedGradientTape", "Adasum", "check_num_rank_power_of_2",
    "mpi_threads_supported"]

KERAS = BASICS + [
    "callbacks", "DistributedOptimizer", "PartialDistributedOptimizer",
    "broadcast_global_variables", "allreduce", "allgather", "broadcast", "reducescatter",
    "load_model"]

CALLBACKS = ["BroadcastGlobalVariablesCallback", "MetricAverageCallback",
             "LearningRateScheduleCallback", "LearningRateWarmupCallback", "BestModelCheckpoint"]


@pytest.mark.parametrize("module,names", [
    (horovodcpp.tensorflow, TENSORFLOW), (horovodcpp.tensorflow.keras, KERAS),
    (horovodcpp.keras, KERAS), (horovodcpp.tensorflow.keras.callbacks, CALLBACKS),
    (horovodcpp.keras.callbacks, CALLBACKS)],
    ids=["tensorflow", "tensorflow.keras", "keras", "tensorflow.keras.callbacks",
         "keras.callbacks"])
def test_horovod_names_exist(module, names):
    assert [n for n in names if not hasattr(module, n)] == []
