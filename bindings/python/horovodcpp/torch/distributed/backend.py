"""Registers "horovodcpp" with torch.distributed. init_process_group
("horovodcpp") starts horovodcpp (hvd.init(): under hvdrun, mpirun, srun or
torchrun) and checks that torch and horovodcpp agree on the rank and size."""
import os

import torch
import torch.distributed as dist

from horovodcpp.common import basics
from horovodcpp.common.process_sets import global_process_set
from horovodcpp.torch.distributed import launch_environment

NAME = "horovodcpp"

# The oldest PyTorch this backend is tested with; older versions lack the
# default group's new_group() hook that groups of some ranks need.
MINIMUM_TORCH = (2, 15)


def torch_version():
    return tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])


def check_torch_version():
    if torch_version() < MINIMUM_TORCH:
        raise RuntimeError(
            "the horovodcpp torch.distributed backend needs PyTorch >= {}.{} (this is {}); with "
            "an older PyTorch use the Horovod API (horovodcpp.torch) or backend 'gloo'/'nccl'"
            .format(MINIMUM_TORCH[0], MINIMUM_TORCH[1], torch.__version__))


# Set where another launcher places the ranks (hvdrun, MPI): horovodcpp's
# Gloo store is then not the env:// one (settings/torchrun_environment.h).
_OTHER_LAUNCHERS = ("HOROVODCPP_RANK", "HOROVOD_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                    "PMIX_RANK")
_PORT_SETTINGS = ("HOROVODCPP_GLOO_RENDEZVOUS_PORT", "HOROVOD_GLOO_RENDEZVOUS_PORT")


def _agree_on_rendezvous_port(store, rank):
    """An env:// launch (torchrun, or RANK ... MASTER_PORT by hand): rank 0
    hosts horovodcpp's rendezvous store on HOROVODCPP_GLOO_RENDEZVOUS_PORT,
    else MASTER_PORT + 1, which another process may hold. Here torch's
    store is up: rank 0 picks a free port and tells the others through it."""
    env = os.environ
    if (store is None or "RANK" not in env or "WORLD_SIZE" not in env
            or any(name in env for name in _OTHER_LAUNCHERS + _PORT_SETTINGS)):
        return
    key = "horovodcpp/rendezvous_port"
    if rank == 0:
        store.set(key, str(launch_environment.free_port()))
    env["HOROVODCPP_GLOO_RENDEZVOUS_PORT"] = store.get(key).decode()


def create(options, backend_options=None):
    """torch's creator for the job's group (extended API). Imports the
    groups only now: an older PyTorch lacks what they are made of, and is
    refused here, at init_process_group, with the version it needs."""
    check_torch_version()
    from horovodcpp.torch.distributed.process_group import DefaultProcessGroup
    if dist.is_initialized():  # a group made other than through new_group (split_group)
        raise NotImplementedError("horovodcpp makes groups through new_group; split_group and "
                                  "other creators are not supported")
    if not basics.is_initialized():
        _agree_on_rendezvous_port(options.store, options.group_rank)
    basics.init()
    rank, size = options.group_rank, options.group_size
    if (rank, size) != (basics.rank(), basics.size()):
        raise RuntimeError(
            "torch.distributed places this process as rank {} of {}, horovodcpp as rank {} of {}: "
            "launch with hvdrun, srun or torchrun and let both read the same job".format(
                rank, size, basics.rank(), basics.size()))
    return DefaultProcessGroup(options.store, rank, size, list(range(size)), global_process_set,
                               options.timeout)


def register():
    if NAME.upper() in getattr(dist.Backend, "_plugins", {}):
        return
    try:
        dist.Backend.register_backend(NAME, create, extended_api=True, devices=["cpu", "cuda"])
    except TypeError:  # PyTorch < 2.1: no devices argument; create() refuses it
        dist.Backend.register_backend(NAME, create, extended_api=True)
