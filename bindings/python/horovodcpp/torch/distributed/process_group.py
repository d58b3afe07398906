"""The process groups of the horovodcpp backend: torch ProcessGroups whose
CPU and CUDA collectives go to a HorovodcppBackend (collectives.py), so
that torch's own machinery (the dispatcher, functional collectives, group
names, device queries) treats them as any group's.

A new group is a horovodcpp process set, which every rank registers
together: torch's new_group is called by every rank of the job, and it
asks the default group's new_group() first, which adds the set on each of
them and returns None where the rank is not a member."""
import datetime

import torch
import torch.distributed as dist

from horovodcpp.common import basics
from horovodcpp.common.process_sets import add_process_set, global_process_set
from horovodcpp.torch.distributed.backend import NAME
from horovodcpp.torch.distributed.collectives import HorovodcppBackend
_CUSTOM = dist.ProcessGroup.BackendType.CUSTOM


class HorovodcppProcessGroup(dist.ProcessGroup):
    """A group over the horovodcpp process set `process_set`; rank and size
    within the group, `members` the global ranks in group order."""

    def __init__(self, store, rank, size, members, process_set, timeout):
        super().__init__(store, rank, size)
        self._process_set = process_set
        self._timeout = timeout
        self._backend = HorovodcppBackend(rank, size, members, process_set, timeout, store)
        for device in ("cpu", "cuda"):
            self._register_backend(torch.device(device), _CUSTOM, self._backend)
        self._set_default_backend(_CUSTOM)
        # The backend's methods themselves, without a frame in between.
        for name in _FORWARDED:
            setattr(self, name, getattr(self._backend, name))

    @property
    def process_set(self):
        """The horovodcpp ProcessSet this group runs on."""
        return self._process_set


# torch's Python layer calls these on the group (and C++ callers such as
# DDP's reducer reach them through the group's trampoline): the caller gets
# the backend's Work itself, with every method of it; the dispatcher's
# callers (functional collectives) reach the backend directly.
_FORWARDED = (
    "allreduce", "allreduce_coalesced", "broadcast", "reduce", "allgather", "_allgather_base",
    "all_gather_single", "allgather_into_tensor_coalesced", "all_gather_single_coalesced",
    "allgather_coalesced", "gather", "gather_single", "scatter", "alltoall", "alltoall_base",
    "all_to_all_single", "reduce_scatter", "_reduce_scatter_base", "reduce_scatter_single",
    "reduce_scatter_tensor_coalesced", "reduce_scatter_single_coalesced", "barrier",
    "monitored_barrier", "send", "recv", "recv_anysource")


class DefaultProcessGroup(HorovodcppProcessGroup):
    """The job's group (horovodcpp's global process set). torch asks it for
    every new group, on every rank that calls new_group."""

    def new_group(self, ranks, timeout=None, backend=None, pg_options=None, group_name=None,
                  group_desc=None):
        if backend is not None and str(backend).lower() not in (NAME, "undefined"):
            return _named(_gloo_group(ranks, timeout, backend, group_name), group_name,
                          group_desc)
        if group_name is not None and not str(group_name).isdigit():
            raise ValueError(
                "horovodcpp: new_group(use_local_synchronization=True) is not supported: a "
                "horovodcpp group is a process set that every rank registers, so call new_group "
                "on every rank")
        ranks = list(ranks)
        if ranks == list(range(basics.size())):
            process_set = global_process_set
        else:
            process_set = _process_set_of(sorted(ranks))
        if basics.rank() not in ranks:
            return None
        group = HorovodcppProcessGroup(_group_store(group_name), ranks.index(basics.rank()),
                                       len(ranks), ranks, process_set, timeout or self._timeout)
        return _named(group, group_name, group_desc)


def _named(group, group_name, group_desc):
    """torch names the groups its own path makes (DeviceMesh finds them by
    name); a group made here is named likewise."""
    if group is None:
        return None
    if group_name is not None:
        group._set_group_name(str(group_name))
    if group_desc is not None:
        group._set_group_desc(group_desc)
    return group


def _group_store(group_name):
    """The store torch gives the group (its name's prefix in the job's)."""
    return dist.PrefixStore("{}/".format(group_name), dist.distributed_c10d._get_default_store())


_sets = {}  # sorted ranks -> the ProcessSet registered for them


def _process_set_of(ranks):
    """The horovodcpp process set of these ranks, registered (collectively)
    the first time a group of them is made."""
    key = tuple(ranks)
    if key not in _sets:
        _sets[key] = add_process_set(list(ranks))
    return _sets[key]


def _gloo_group(ranks, timeout, backend, group_name):
    """new_group(backend="gloo") in a horovodcpp job: a Gloo group of those
    ranks (only Gloo: CUDA tensors run on NCCL through horovodcpp's own)."""
    if str(backend).lower() != "gloo":
        raise ValueError("horovodcpp: new_group(backend={!r}) in a horovodcpp job: use "
                         "backend='horovodcpp' (CUDA tensors run on NCCL through it) or "
                         "'gloo'".format(backend))
    ranks = list(ranks)
    if basics.rank() not in ranks:
        return None
    store = _group_store(group_name)
    rank = ranks.index(basics.rank())
    group = dist.ProcessGroup(store, rank, len(ranks))
    gloo = dist.ProcessGroupGloo(store, rank, len(ranks),
                                 timeout or datetime.timedelta(minutes=30))
    group._register_backend(torch.device("cpu"), dist.ProcessGroup.BackendType.GLOO, gloo)
    group._set_default_backend(dist.ProcessGroup.BackendType.GLOO)
    return group


def _clear_sets():
    """After shutdown the sets are gone (a new job registers its own)."""
    _sets.clear()
