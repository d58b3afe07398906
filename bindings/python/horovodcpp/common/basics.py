"""The job: init/shutdown, topology, build and transport queries, the
timeline, reduction ops and errors. Framework front ends re-export these."""
import array
import atexit
import os

from horovodcpp import _core
from horovodcpp._core import (  # noqa: F401  (re-exported)
    BackendError, HorovodInternalError, HorovodTimeoutError, InvalidArgumentError,
    MismatchError, RankFailureError)
from horovodcpp.common import process_sets as _process_sets

Average = _core.ReduceOp.Average
Sum = _core.ReduceOp.Sum
Min = _core.ReduceOp.Min
Max = _core.ReduceOp.Max
Product = _core.ReduceOp.Product

is_initialized = _core.is_initialized
size = _core.size
rank = _core.rank
local_size = _core.local_size
local_rank = _core.local_rank
cross_size = _core.cross_size
cross_rank = _core.cross_rank

_state = {"homogeneous": None, "atexit": False}


def init(comm=None, process_sets=None):
    """Starts horovodcpp on every rank that hvdrun (or mpirun) launched.
    Settings come from HOROVODCPP_* (or Horovod's HOROVOD_*) environment
    variables. Collective: every rank calls it. May be called again after
    shutdown().

    comm: Horovod's MPI sub-communicator or rank list: not supported yet.
    process_sets: only the global process set is supported yet.
    """
    if comm is not None:
        raise NotImplementedError(
            "init(comm=...): horovodcpp runs on every launched rank; sub-communicators "
            "need process sets, which the C++ core does not have yet")
    _process_sets.check_init_argument(process_sets)
    if _core.is_initialized():
        return
    _core.init()
    if not _state["atexit"]:
        # Shut down while Python still runs: pending operations write into
        # tensors that Python owns.
        atexit.register(shutdown)
        _state["atexit"] = True
    # Homogeneous when every host runs as many ranks: max(local_size) equals
    # min(local_size), both found by one Max allreduce of (n, -n).
    sizes = array.array("q", [local_size(), -local_size()])
    _core.allreduce_async(sizes, name="horovodcpp.init.local_sizes", op=Max).wait()
    _state["homogeneous"] = sizes[0] == -sizes[1]


def shutdown():
    """Stops horovodcpp. Operations still pending on any rank fail with
    RankFailureError on every rank. Safe to call twice."""
    _core.shutdown()


def is_homogeneous():
    """True when every host runs the same number of ranks."""
    if not is_initialized():
        raise ValueError("horovodcpp has not been initialized; use hvd.init().")
    return _state["homogeneous"]


def start_timeline(file_path, mark_cycles=False):
    """Rank 0 writes a Chrome-trace timeline to file_path (no-op elsewhere)."""
    _core.start_timeline(file_path, mark_cycles)


def stop_timeline():
    """Stops the timeline; the file is complete JSON when this returns."""
    _core.stop_timeline()


def _transport():
    # The C++ core's choice (core/runtime.cc): HOROVODCPP_CPU_OPERATIONS, then
    # HOROVODCPP_CONTROLLER (or their HOROVOD_ names), else the first built.
    for setting in ("CPU_OPERATIONS", "CONTROLLER"):
        for prefix in ("HOROVODCPP_", "HOROVOD_"):
            value = os.environ.get(prefix + setting)
            if value is not None:
                return value.lower()
    return _core.built_transports()[0]


def mpi_built():
    return "mpi" in _core.built_transports()


def gloo_built():
    return "gloo" in _core.built_transports()


def mpi_enabled():
    """True when this job's collectives run over MPI."""
    return _transport() == "mpi"


def gloo_enabled():
    """True when this job's collectives run over Gloo."""
    return _transport() == "gloo"


def nccl_built():
    return False


def cuda_built():
    return False


def rocm_built():
    return False


def ddl_built():
    return False


def ccl_built():
    return False
