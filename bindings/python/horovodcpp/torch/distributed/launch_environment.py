"""torch.distributed's env:// variables for a job that hvdrun, mpirun or
srun started: torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
MASTER_ADDR and MASTER_PORT, the other launchers do not. Where RANK is
unset, horovodcpp starts (hvd.init(), which knows the job from its
launcher), and these are set from it: rank 0 picks a free port for torch's
store and every rank learns its address. Any torch.distributed script
launched that way then initializes as under torchrun, on any backend."""
import os
import socket

from horovodcpp.common import basics


def _rank0_address():
    """How the other ranks reach rank 0's host."""
    for name in ("HOROVODCPP_HOSTNAME", "HOROVOD_HOSTNAME"):
        if os.environ.get(name):
            return os.environ[name]
    if basics.local_size() == basics.size():
        return "127.0.0.1"
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname()


def free_port():
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def fill_in():
    if "RANK" in os.environ:
        return
    from horovodcpp.torch.functions import broadcast_object
    basics.init()
    master = (_rank0_address(), free_port()) if basics.rank() == 0 else None
    master = broadcast_object(master, 0, "horovodcpp.torch.distributed.master")
    values = {"RANK": basics.rank(), "WORLD_SIZE": basics.size(),
              "LOCAL_RANK": basics.local_rank(), "LOCAL_WORLD_SIZE": basics.local_size(),
              "GROUP_RANK": basics.cross_rank() if basics.is_homogeneous() else None,
              "MASTER_ADDR": master[0], "MASTER_PORT": master[1]}
    for name, value in values.items():
        if value is not None:
            os.environ.setdefault(name, str(value))
