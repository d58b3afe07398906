"""The job: init/shutdown, topology, build and transport queries, the
timeline, reduction ops and errors. Framework front ends re-export these."""
import atexit

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
Adasum = _core.ReduceOp.Adasum  # floating tensors, power-of-two ranks (docs/adasum.md)

is_initialized = _core.is_initialized
dump_flight_recorder = _core.dump_flight_recorder  # this rank's last collectives, to a file
size = _core.size
rank = _core.rank
local_size = _core.local_size
local_rank = _core.local_rank
cross_size = _core.cross_size
cross_rank = _core.cross_rank

# What every front end and its mpi_ops module re-export (`from
# horovodcpp.common.basics import *`), as Horovod's do from its basics.
__all__ = [
    "Adasum", "Average", "Max", "Min", "Product", "Sum",
    "BackendError", "HorovodInternalError", "HorovodTimeoutError", "InvalidArgumentError",
    "MismatchError", "RankFailureError",
    "init", "shutdown", "is_initialized", "is_homogeneous",
    "size", "rank", "local_size", "local_rank", "cross_size", "cross_rank",
    "mpi_built", "mpi_enabled", "mpi_threads_supported", "gloo_built", "gloo_enabled",
    "nccl_built", "cuda_built", "rocm_built", "ddl_built", "ccl_built",
    "start_timeline", "stop_timeline", "dump_flight_recorder",
]

_state = {"atexit": False}


def init(comm=None, process_sets=None):
    """Starts horovodcpp on every rank that hvdrun (or mpirun) launched.
    Settings come from HOROVODCPP_* (or Horovod's HOROVOD_*) environment
    variables. Collective: every rank of the job calls it, with the same
    arguments. May be called again after shutdown(); a call while
    initialized does nothing.

    comm: the ranks that form the job, as in Horovod: None or [] (every
        launched rank); a list of MPI_COMM_WORLD ranks (MPI mode), each of
        which calls init with the same list and gets its place in the list
        as hvd.rank() (other ranks may form jobs of their own meanwhile); or
        an mpi4py communicator: its members, in its rank order (it is then
        `global_process_set.mpi_comm`). Gloo mode runs on every rank only.
    process_sets: ProcessSet objects to register now (ids 1, 2, ... in
        order; the objects get their process_set_id), or "dynamic" (sets can
        always be added later with add_process_set). A ProcessSet of an
        mpi4py communicator stands for every distinct communicator the
        ranks give at its place (e.g. both halves of a Split).
    """
    mpi_comm = comm if _process_sets.is_mpi_comm(comm) else None
    if mpi_comm is not None:
        world_ranks = _process_sets.world_ranks(mpi_comm)
    elif comm is None:
        world_ranks = []
    elif isinstance(comm, (list, tuple, range)):
        world_ranks = [int(r) for r in comm]
    else:
        raise TypeError("init(comm={!r}): comm is a list of MPI_COMM_WORLD ranks or an mpi4py "
                        "communicator".format(comm))
    if _core.is_initialized():
        if process_sets not in (None, "dynamic"):
            raise ValueError("horovodcpp is already initialized: add process sets with "
                             "hvd.add_process_set()")
        return
    sets = _process_sets.init_arguments(process_sets, world_ranks, mpi_comm)
    core_sets = [ps.ranks for ps in sets] if sets else None
    if world_ranks:
        _core.init(core_sets, world_ranks)
    else:
        _core.init(core_sets)
    _process_sets.after_init(sets)
    _process_sets.global_process_set.mpi_comm = mpi_comm
    if not _state["atexit"]:
        # Shut down while Python still runs: pending operations write into
        # tensors that Python owns.
        atexit.register(shutdown)
        _state["atexit"] = True


def shutdown():
    """Stops horovodcpp. Operations still pending on any rank fail with
    RankFailureError on every rank. Safe to call twice. Process sets added
    in this run are unregistered (their process_set_id becomes None)."""
    _core.shutdown()
    _process_sets.after_shutdown()


def is_homogeneous():
    """True when every host runs the same number of ranks."""
    return _core.is_homogeneous()


def start_timeline(file_path, mark_cycles=False):
    """Rank 0 writes a Chrome-trace timeline to file_path (no-op elsewhere)."""
    _core.start_timeline(file_path, mark_cycles)


def stop_timeline():
    """Stops the timeline; the file is complete JSON when this returns."""
    _core.stop_timeline()


def mpi_built():
    return "mpi" in _core.built_transports()


def gloo_built():
    return "gloo" in _core.built_transports()


def mpi_enabled():
    """True when this job's collectives run over MPI (False before init)."""
    return _core.is_initialized() and _core.transport() == "mpi"


def gloo_enabled():
    """True when this job's collectives run over Gloo (False before init)."""
    return _core.is_initialized() and _core.transport() == "gloo"


def nccl_built():
    """The NCCL version this build uses (NCCL_VERSION_CODE, e.g. 22807 for
    2.28.7; CUDA tensors are reduced on the GPU), 0 without NCCL."""
    return _core.nccl_version()


def mpi_threads_supported():
    """True when MPI provides MPI_THREAD_MULTIPLE, so other code (mpi4py)
    may call MPI too. ValueError when the job does not run on MPI, or
    before init()."""
    if not mpi_enabled():
        raise ValueError("Horovod MPI is not enabled; Please make sure it's installed and enabled.")
    return _core.mpi_threads_supported()


def cuda_built():
    """True when built with CUDA: CUDA tensors are accepted (NCCL, or staged
    through host memory onto MPI/Gloo)."""
    return bool(_core.built_gpu_operations())


def rocm_built():
    return False


def ddl_built():
    return False


def ccl_built():
    return False
