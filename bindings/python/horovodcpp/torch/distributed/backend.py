"""Registers "horovodcpp" with torch.distributed, makes its process groups
and maps new_group onto horovodcpp process sets.

init_process_group("horovodcpp") starts horovodcpp (hvd.init(): under
hvdrun, mpirun, srun or torchrun) and checks that torch and horovodcpp
agree on the rank and size. A new group is a horovodcpp process set, which
every rank registers together: torch's new_group is called by every rank of
the job, and the default group's new_group() (which torch asks first) adds
the set on each of them, returning None where the rank is not a member."""
import datetime

import torch
import torch.distributed as dist

from horovodcpp.common import basics
from horovodcpp.common.process_sets import add_process_set, global_process_set
from horovodcpp.torch.distributed.process_group import ProcessGroupHorovodcpp

NAME = "horovodcpp"
# The oldest PyTorch this backend is tested with; older versions lack the
# default group's new_group() hook that subgroups need.
MINIMUM_TORCH = (2, 15)


def torch_version():
    return tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])


def check_torch_version():
    if torch_version() < MINIMUM_TORCH:
        raise RuntimeError(
            "the horovodcpp torch.distributed backend needs PyTorch >= {}.{} (this is {}); with "
            "an older PyTorch use the Horovod API (horovodcpp.torch) or backend 'gloo'/'nccl'"
            .format(MINIMUM_TORCH[0], MINIMUM_TORCH[1], torch.__version__))


class DefaultProcessGroup(ProcessGroupHorovodcpp):
    """The job's group (horovodcpp's global process set). torch asks it for
    every new group, on every rank that calls new_group."""

    def new_group(self, ranks, timeout=None, backend=None, pg_options=None, group_name=None,
                  group_desc=None):
        if backend is not None and str(backend).lower() not in (NAME, "undefined"):
            return _foreign_group(ranks, timeout, backend, group_name)
        if group_name is not None and not str(group_name).isdigit():
            raise ValueError(
                "horovodcpp: new_group(use_local_synchronization=True) is not supported: a "
                "horovodcpp group is a process set that every rank registers, so call new_group "
                "on every rank")
        ranks = list(ranks)
        store = dist.PrefixStore("{}/".format(group_name), dist.distributed_c10d._get_default_store())
        if ranks == list(range(basics.size())):
            process_set = global_process_set
        else:
            process_set = _process_set_of(sorted(ranks))
        if basics.rank() not in ranks:
            return None
        return ProcessGroupHorovodcpp(ranks.index(basics.rank()), len(ranks), ranks, process_set,
                                      timeout or self._timedelta(), store)

    def _timedelta(self):
        return datetime.timedelta(seconds=self._timeout) if self._timeout else None


_sets = {}  # sorted ranks -> the ProcessSet registered for them


def _process_set_of(ranks):
    """The horovodcpp process set of these ranks, registered (collectively)
    the first time a group of them is made."""
    key = tuple(ranks)
    if key not in _sets:
        _sets[key] = add_process_set(list(ranks))
    return _sets[key]


def _foreign_group(ranks, timeout, backend, group_name):
    """new_group(backend="gloo") under a horovodcpp job: a Gloo group of
    those ranks (only Gloo: NCCL's communicators come with the horovodcpp
    backend for CUDA tensors)."""
    if str(backend).lower() != "gloo":
        raise ValueError("horovodcpp: new_group(backend={!r}) under a horovodcpp default group: "
                         "use backend='horovodcpp' (CUDA tensors run on NCCL through it) or "
                         "'gloo'".format(backend))
    ranks = list(ranks)
    if dist.get_rank() not in ranks:
        return None
    store = dist.PrefixStore("{}/".format(group_name), dist.distributed_c10d._get_default_store())
    group = dist.ProcessGroup(store, ranks.index(dist.get_rank()), len(ranks))
    gloo = dist.ProcessGroupGloo(store, ranks.index(dist.get_rank()), len(ranks),
                                 timeout or datetime.timedelta(minutes=30))
    group._set_default_backend(dist.ProcessGroup.BackendType.GLOO)
    group._register_backend(torch.device("cpu"), dist.ProcessGroup.BackendType.GLOO, gloo)
    return group


def create(options, backend_options=None):
    """torch's creator for the job's group (extended API)."""
    check_torch_version()
    if dist.is_initialized():  # a subgroup made other than through new_group
        raise NotImplementedError(
            "horovodcpp makes groups through the job's group (new_group); split_group and "
            "other creators are not supported")
    basics.init()
    rank, size = options.group_rank, options.group_size
    if (rank, size) != (basics.rank(), basics.size()):
        raise RuntimeError(
            "torch.distributed places this process as rank {} of {}, horovodcpp as rank {} of {}: "
            "launch with hvdrun, srun or torchrun and let both read the same job".format(
                rank, size, basics.rank(), basics.size()))
    return DefaultProcessGroup(rank, size, list(range(size)), global_process_set, options.timeout,
                               options.store)


def register():
    if NAME in dist.Backend.backend_list:
        return
    try:
        dist.Backend.register_backend(NAME, create, extended_api=True, devices=["cpu", "cuda"])
    except TypeError:  # PyTorch < 2.1: no devices argument; create() refuses it
        dist.Backend.register_backend(NAME, create, extended_api=True)
