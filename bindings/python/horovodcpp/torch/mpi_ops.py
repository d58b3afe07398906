"""horovodcpp.torch.mpi_ops: the names of horovod.torch.mpi_ops, which user
code imports (`from horovod.torch.mpi_ops import allreduce, rank`): the
job's basics, process sets, compression, the differentiable collectives
(autograd_ops.py) and the asynchronous and in-place ones (core_ops.py).
"""
from horovodcpp import _core
from horovodcpp.common.basics import *  # noqa: F401,F403  (basics.__all__)
from horovodcpp.common.process_sets import *  # noqa: F401,F403  (ProcessSet, add_process_set, ...)
from horovodcpp.common.util import (  # noqa: F401
    check_installed_version, get_average_backwards_compatibility_fun, num_rank_is_power_2)
from horovodcpp.common.util import resolve_op as handle_average_backwards_compatibility  # noqa
from horovodcpp.torch.autograd_ops import (  # noqa: F401
    HorovodAllgather, HorovodAllreduce, HorovodAlltoall, HorovodBroadcast,
    HorovodGroupedAllgather, HorovodGroupedAllreduce, HorovodGroupedReducescatter,
    HorovodReducescatter, allgather, allreduce, alltoall, broadcast, grouped_allgather,
    grouped_allreduce, grouped_reducescatter, reducescatter)
from horovodcpp.torch.compression import Compression  # noqa: F401
from horovodcpp.torch.core_ops import (  # noqa: F401
    allgather_async, allreduce_, allreduce_async, allreduce_async_, alltoall_async, barrier,
    broadcast_, broadcast_async, broadcast_async_, grouped_allgather_async, grouped_allreduce_,
    grouped_allreduce_async, grouped_allreduce_async_, grouped_reducescatter_async, join,
    reducescatter_async, sparse_allreduce_async)
from horovodcpp.torch.handles import poll, synchronize  # noqa: F401

# Horovod's handle on its compiled extension; here the one core of every
# front end.
mpi_lib = _core


def gpu_available(ext_base_name="torch", verbose=False):
    from horovodcpp.common.util import gpu_available as available
    return available(ext_base_name, verbose)
