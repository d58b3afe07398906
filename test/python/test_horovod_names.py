"""Horovod 0.28.1's import paths and names, as user code and Horovod's own
tests use them (`from horovod.torch.mpi_ops import allreduce`,
`horovod.common.util.split_list`, ...), through a `horovod` -> `horovodcpp`
alias: every public name of each module (listed from Horovod's sources,
without the modules they import) exists at the same path, and the helpers
behave as Horovod's."""
import importlib
import os

import pytest

import horovodcpp.torch as hvd
from horovodcpp.common import elastic, exceptions, util

HOROVOD_NAMES = {
    "horovod.torch": """
        Adasum Average Compression DistributedOptimizer HorovodInternalError Max Min
        ProcessSet Product Sum SyncBatchNorm add_process_set allgather allgather_async
        allgather_object allreduce allreduce_ allreduce_async allreduce_async_ alltoall
        alltoall_async barrier broadcast broadcast_ broadcast_async broadcast_async_
        broadcast_object broadcast_optimizer_state broadcast_parameters ccl_built
        check_extension cross_rank cross_size cuda_built ddl_built elastic
        global_process_set gloo_built gloo_enabled grouped_allgather
        grouped_allgather_async grouped_allreduce grouped_allreduce_
        grouped_allreduce_async grouped_allreduce_async_ grouped_reducescatter
        grouped_reducescatter_async init is_initialized join local_rank local_size
        mpi_built mpi_enabled mpi_threads_supported nccl_built poll rank reducescatter
        reducescatter_async remove_process_set rocm_built shutdown size
        sparse_allreduce_async start_timeline stop_timeline synchronize
    """,
    "horovod.torch.mpi_ops": """
        Adasum Average Compression HorovodAllgather HorovodAllreduce HorovodAlltoall
        HorovodBroadcast HorovodGroupedAllgather HorovodGroupedAllreduce
        HorovodGroupedReducescatter HorovodInternalError HorovodReducescatter Max Min
        ProcessSet Product Sum add_process_set allgather allgather_async allreduce
        allreduce_ allreduce_async allreduce_async_ alltoall alltoall_async barrier
        broadcast broadcast_ broadcast_async broadcast_async_ ccl_built
        check_installed_version cross_rank cross_size cuda_built ddl_built
        get_average_backwards_compatibility_fun global_process_set gloo_built gloo_enabled
        gpu_available grouped_allgather grouped_allgather_async grouped_allreduce
        grouped_allreduce_ grouped_allreduce_async grouped_allreduce_async_
        grouped_reducescatter grouped_reducescatter_async
        handle_average_backwards_compatibility init is_homogeneous is_initialized join
        local_rank local_size mpi_built mpi_enabled mpi_lib mpi_threads_supported
        nccl_built num_rank_is_power_2 poll rank reducescatter reducescatter_async
        remove_process_set rocm_built shutdown size sparse_allreduce_async start_timeline
        stop_timeline synchronize
    """,
    "horovod.common.util": """
        EXTENSIONS HorovodVersionMismatchError ccl_built check_extension
        check_installed_version ddl_built env extension_available
        get_average_backwards_compatibility_fun get_ext_suffix get_extension_full_path
        get_version_mismatch_message gloo_built gpu_available is_iterable mpi_built
        nccl_built num_rank_is_power_2 split_list
    """,
    "horovod.common.exceptions": """
        HorovodInternalError HorovodVersionMismatchError HostsUpdatedInterrupt
        get_version_mismatch_message
    """,
    "horovod.common.elastic": """
        HorovodInternalError HostUpdateResult HostsUpdatedInterrupt ObjectState State
        WorkerNotificationManager notification_manager run_fn
    """,
    "horovod.torch.elastic": """
        ElasticSampler TorchState init run run_fn shutdown
    """,
}


@pytest.mark.parametrize("module", sorted(HOROVOD_NAMES))
def test_every_horovod_name_is_there(module):
    ours = importlib.import_module(module.replace("horovod", "horovodcpp", 1))
    missing = [name for name in HOROVOD_NAMES[module].split() if not hasattr(ours, name)]
    assert missing == [], "{} lacks {}".format(module, missing)


def test_util_helpers():
    assert util.split_list([1, 2, 3, 4, 5], 3) == [[1, 2], [3, 4], [5]]
    assert util.split_list([1], 3) == [[1], [], []]
    assert [util.num_rank_is_power_2(n) for n in (0, 1, 2, 3, 4, 6, 8)] == [
        False, True, True, False, True, False, True]
    assert util.is_iterable([1]) and not util.is_iterable(1)
    with util.env(HVD_NAMES_TEST="a", HVD_NAMES_NONE=None):
        assert os.environ["HVD_NAMES_TEST"] == "a"
        assert "HVD_NAMES_NONE" not in os.environ
    assert "HVD_NAMES_TEST" not in os.environ
    assert util.extension_available("torch") and not util.extension_available("mxnet")
    assert util.gpu_available("torch") == hvd.cuda_built()
    assert util.check_installed_version("torch", "0.0.0") is None
    util.check_extension("horovod.torch", "HOROVOD_WITH_PYTORCH", __file__, "mpi_lib_v2")
    assert util.get_extension_full_path("/a/b/__init__.py", "c", "lib").startswith("/a/b/c/lib")


def test_average_argument_as_in_horovod():
    resolve = hvd.mpi_ops.handle_average_backwards_compatibility
    assert resolve(None, None) == hvd.Average
    assert resolve(hvd.Sum, None) == hvd.Sum
    with pytest.warns(DeprecationWarning):
        assert resolve(None, False) == hvd.Sum
    with pytest.raises(ValueError):
        resolve(hvd.Sum, True)
    assert util.get_average_backwards_compatibility_fun(hvd)(None, None) == hvd.Average


def test_exceptions_take_horovods_arguments():
    with pytest.raises(TypeError):
        exceptions.HostsUpdatedInterrupt()  # skip_sync is required, as in Horovod
    assert exceptions.HostsUpdatedInterrupt(True).skip_sync is True
    assert hvd.elastic.HostsUpdatedInterrupt is exceptions.HostsUpdatedInterrupt
    error = exceptions.HorovodVersionMismatchError("torch", "2.1", "2.0")
    assert isinstance(error, ImportError) and error.installed_version == "2.0"


def test_notified_host_updates_interrupt_at_commit():
    # Outside an elastic job a state decides alone (no collective).
    state = hvd.elastic.ObjectState(bcast_object=lambda x: x, get_rank=lambda: 0, epoch=0)
    elastic.notification_manager.register_listener(state)
    try:
        state.commit()  # nothing new
        elastic.notification_manager.handle_hosts_updated(5, elastic.HostUpdateResult.removed)
        with pytest.raises(exceptions.HostsUpdatedInterrupt) as raised:
            state.commit()
        assert raised.value.skip_sync is True
        elastic.notification_manager.handle_hosts_updated(4, elastic.HostUpdateResult.added)
        state.commit()  # older than the last one: nothing
    finally:
        elastic.notification_manager.remove_listener(state)
