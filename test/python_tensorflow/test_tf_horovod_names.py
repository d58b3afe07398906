"""Horovod 0.28.1's TensorFlow and Keras import paths, names and signatures
(see test/python/test_horovod_names.py): every public name of each module
exists at the same path under horovodcpp, and the signatures where
horovod.keras differs from horovod.tensorflow.keras are horovod.keras's."""
import importlib
import inspect

import pytest

HOROVOD_NAMES = {
    "horovod.tensorflow": """
        Adasum Average BroadcastGlobalVariablesHook Compression DistributedGradientTape
        DistributedOptimizer Max Min PartialDistributedGradientTape ProcessSet Product Sum
        SyncBatchNormalization add_process_set allgather allgather_object allreduce
        alltoall broadcast broadcast_ broadcast_global_variables broadcast_object
        broadcast_object_fn broadcast_variables ccl_built check_extension
        check_num_rank_power_of_2 cross_rank cross_size cuda_built ddl_built elastic
        global_process_set gloo_built gloo_enabled gpu_available grouped_allgather
        grouped_allreduce grouped_reducescatter handle_average_backwards_compatibility
        init is_homogeneous is_initialized join local_rank local_rank_op local_size
        local_size_op mpi_built mpi_enabled mpi_threads_supported nccl_built
        process_set_included_op rank rank_op reducescatter refs_to_vars remove_process_set
        rocm_built shutdown size size_op split_list start_timeline stop_timeline
        vars_to_refs
    """,
    "horovod.tensorflow.mpi_ops": """
        Adasum Average MPI_LIB Max Min ProcessSet Product Sum add_process_set allgather
        alltoall broadcast broadcast_ ccl_built check_installed_version
        check_num_rank_power_of_2 cross_rank cross_size cuda_built ddl_built
        get_average_backwards_compatibility_fun get_ext_suffix global_process_set
        gloo_built gloo_enabled gpu_available grouped_allgather
        handle_average_backwards_compatibility init is_homogeneous is_initialized join
        local_rank local_rank_op local_size local_size_op mpi_built mpi_enabled
        mpi_threads_supported nccl_built num_rank_is_power_2 process_set_included_op rank
        rank_op remove_process_set rocm_built shutdown size size_op start_timeline
        stop_timeline
    """,
    "horovod.tensorflow.keras": """
        Average Compression DistributedOptimizer ProcessSet Sum add_process_set allgather
        allreduce broadcast broadcast_global_variables callbacks ccl_built cross_rank
        cross_size cuda_built ddl_built elastic global_process_set gloo_built gloo_enabled
        init is_initialized load_model local_rank local_size mpi_built mpi_enabled
        mpi_threads_supported nccl_built rank reducescatter remove_process_set rocm_built
        shutdown size start_timeline stop_timeline
    """,
    "horovod.keras": """
        Adasum Average Compression DistributedOptimizer PartialDistributedOptimizer Sum
        allgather allreduce broadcast broadcast_global_variables callbacks ccl_built
        cross_rank cross_size cuda_built ddl_built elastic global_process_set gloo_built
        gloo_enabled init is_initialized load_model local_rank local_size mpi_built
        mpi_enabled mpi_threads_supported nccl_built rank reducescatter rocm_built
        shutdown size start_timeline stop_timeline
    """,
    "horovod.tensorflow.elastic": """
        HorovodInternalError ObjectState TensorFlowKerasState TensorFlowState
        broadcast_object broadcast_object_fn broadcast_variables init rank run run_fn
        shutdown
    """,
    "horovod.tensorflow.keras.elastic": """
        CommitStateCallback KerasState TensorFlowKerasState UpdateBatchStateCallback
        UpdateEpochStateCallback run
    """,
    "horovod.keras.elastic": """
        CommitStateCallback KerasState TensorFlowKerasState UpdateBatchStateCallback
        UpdateEpochStateCallback run
    """,
    "horovod.keras.callbacks": """
        BestModelCheckpoint BroadcastGlobalVariablesCallback LearningRateScheduleCallback
        LearningRateWarmupCallback MetricAverageCallback
    """,
    "horovod.tensorflow.keras.callbacks": """
        BestModelCheckpoint BroadcastGlobalVariablesCallback LearningRateScheduleCallback
        LearningRateWarmupCallback MetricAverageCallback
    """,
}


@pytest.mark.parametrize("module", sorted(HOROVOD_NAMES))
def test_every_horovod_name_is_there(module):
    ours = importlib.import_module(module.replace("horovod", "horovodcpp", 1))
    missing = [name for name in HOROVOD_NAMES[module].split() if not hasattr(ours, name)]
    assert missing == [], "{} lacks {}".format(module, missing)


def parameters(function):
    return list(inspect.signature(function).parameters)


def test_keras_signatures_are_horovod_keras():
    import horovodcpp.keras as hvd_keras
    import horovodcpp.tensorflow.keras as hvd_tf_keras
    assert parameters(hvd_keras.DistributedOptimizer) == [
        "optimizer", "name", "device_dense", "device_sparse", "compression", "sparse_as_dense",
        "gradient_predivide_factor", "op", "num_groups", "groups"]
    assert parameters(hvd_keras.PartialDistributedOptimizer) == [
        "optimizer", "name", "device_dense", "device_sparse", "compression", "sparse_as_dense",
        "gradient_predivide_factor", "op", "groups", "process_set", "local_layers",
        "scale_local_gradients"]
    assert parameters(hvd_tf_keras.DistributedOptimizer) == [
        "optimizer", "name", "device_dense", "device_sparse", "compression", "sparse_as_dense",
        "gradient_predivide_factor", "op", "backward_passes_per_step",
        "average_aggregated_gradients", "num_groups", "groups", "process_set",
        "scale_local_gradients"]
    assert inspect.signature(hvd_keras.allreduce).parameters["average"].default is True
    assert inspect.signature(hvd_tf_keras.allreduce).parameters["average"].default is None
    assert parameters(hvd_keras.callbacks.BestModelCheckpoint)[:5] == [
        "monitor", "verbose", "save_weights_only", "mode", "save_freq"]


def test_tensorflow_mpi_ops_defaults_the_name():
    import tensorflow as tf
    from horovodcpp.tensorflow import mpi_ops
    for op in (mpi_ops.allgather, mpi_ops.broadcast, mpi_ops.alltoall,
               mpi_ops.grouped_allgather):
        signature = inspect.signature(op)
        assert signature.parameters["name"].default is None, op
        assert signature.parameters["ignore_name_scope"].default is False, op
    mpi_ops.init()
    gathered = mpi_ops.allgather(tf.constant([float(mpi_ops.rank())]))
    assert gathered.numpy().tolist() == [float(r) for r in range(mpi_ops.size())]
    assert mpi_ops.broadcast(tf.constant([mpi_ops.rank()]), 0).numpy().tolist() == [0]


def test_best_model_checkpoint_saves_weights_only(tmp_path):
    import horovodcpp.tensorflow.keras as hvd
    checkpoint = hvd.callbacks.BestModelCheckpoint(monitor="loss", save_weights_only=True)
    assert checkpoint.save_weights_only
    checkpoint.filepath = str(tmp_path / "best.weights.h5")
    import keras
    import numpy as np
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=1, verbose=0, callbacks=[checkpoint])
    assert (tmp_path / "best.weights.h5").exists()


def test_executing_eagerly_and_variable_refs():
    import keras
    import tensorflow as tf
    import horovodcpp.tensorflow as hvd
    assert hvd._executing_eagerly()
    assert tf.function(lambda: tf.constant(hvd._executing_eagerly()))().numpy() == False  # noqa
    variables = [tf.Variable(1.0), keras.Variable(2.0)]
    refs = hvd.vars_to_refs(variables)
    assert len(set(refs)) == 2
    assert all(a is b for a, b in zip(hvd.refs_to_vars(refs), variables))


def test_broadcast_global_variables_hook_in_a_tf1_session():
    import tensorflow as tf
    import horovodcpp.tensorflow as hvd
    hvd.init()
    with tf.Graph().as_default():
        v = tf.compat.v1.get_variable("hook_v", initializer=float(hvd.rank() + 1))
        hook = hvd.BroadcastGlobalVariablesHook(0)
        with tf.compat.v1.train.MonitoredSession(hooks=[hook]) as session:
            assert session.run(v) == 1.0


def test_graph_mode_in_a_session_as_horovods_tests_run():
    # Horovod's suites run every test in graph mode too, in a default session.
    import tensorflow as tf
    import horovodcpp.tensorflow as hvd
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    with tf.Graph().as_default(), tf.compat.v1.Session() as session, session.as_default():
        assert hvd.allgather_object({"r": rank}) == [{"r": r} for r in range(size)]
        assert hvd.broadcast_object("from %d" % rank, root_rank=size - 1) == "from %d" % (size - 1)
        x = tf.ones([3]) * rank
        # Every rank must run the backward's allreduce, the non-roots too
        # (whose gradient is zero): else the root waits for them.
        grad = tf.gradients(hvd.broadcast(x, 0), x, tf.ones([3]))[0]
        assert session.run(grad).tolist() == [1.0 if rank == 0 else 0.0] * 3
        # broadcast_'s values are read after the assignment.
        v = tf.Variable(float(rank))
        session.run(v.initializer)
        (value,) = hvd.broadcast_([v], size - 1)
        assert session.run(value) == size - 1
