"""horovodcpp.tensorflow.mpi_ops: the names of horovod.tensorflow.mpi_ops,
which user code imports (`from horovod.tensorflow.mpi_ops import allgather,
rank`): the job's basics and process sets, and the collectives as
horovod.tensorflow has them (differentiable, `name` optional,
`ignore_name_scope` accepted). The single TensorFlow ops they are built on
are in kernels.py.
"""
from horovodcpp import _core
from horovodcpp.common.basics import *  # noqa: F401,F403  (basics.__all__)
from horovodcpp.common.process_sets import *  # noqa: F401,F403  (ProcessSet, add_process_set, ...)
from horovodcpp.common.util import (  # noqa: F401
    check_installed_version, get_average_backwards_compatibility_fun, get_ext_suffix,
    num_rank_is_power_2)
from horovodcpp.common.util import num_rank_is_power_2 as check_num_rank_power_of_2  # noqa: F401
from horovodcpp.common.util import resolve_op as handle_average_backwards_compatibility  # noqa
from horovodcpp.tensorflow.functions import broadcast_  # noqa: F401
from horovodcpp.tensorflow.kernels import (  # noqa: F401
    barrier, join, local_rank_op, local_size_op, process_set_included_op, rank_op, size_op)
from horovodcpp.tensorflow.collectives import (  # noqa: F401
    allgather, alltoall, broadcast, grouped_allgather)

# Horovod's handle on its compiled library; here the one core of every
# front end.
MPI_LIB = _core


def gpu_available(ext_base_name="tensorflow", verbose=False):
    from horovodcpp.common.util import gpu_available as available
    return available(ext_base_name, verbose)
