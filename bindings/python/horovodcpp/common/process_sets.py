"""Process sets, as in Horovod: collectives on a subset of the ranks.

    even = hvd.ProcessSet([0, 2])
    hvd.init(process_sets=[even])            # or, after init: hvd.add_process_set([0, 2])
    if even.included():
        hvd.allreduce(t, process_set=even)   # averaged over ranks 0 and 2

A ProcessSet names its members by global rank (hvd.rank()). It is usable
once registered, by init(process_sets=...) or add_process_set(), which every
rank of the job must call in the same order with the same ranks. The C++
core runs each set on its own communicators and background thread."""
from horovodcpp import _core


__all__ = ["ProcessSet", "add_process_set", "global_process_set", "remove_process_set"]


def is_mpi_comm(obj):
    """Whether `obj` is an mpi4py communicator."""
    return type(obj).__module__.startswith("mpi4py") and hasattr(obj, "Get_group")


def world_ranks(comm):
    """The MPI_COMM_WORLD ranks of an mpi4py communicator's members, in its
    rank order."""
    from mpi4py import MPI
    group, world = comm.Get_group(), MPI.COMM_WORLD.Get_group()
    try:
        return list(MPI.Group.Translate_ranks(group, list(range(group.Get_size())), world))
    finally:
        group.Free()
        world.Free()


class ProcessSet:
    """A subset of the job's ranks that collectives can be limited to.

    ranks_or_comm: the members' global ranks (any order; kept sorted in
    `ranks`), or, in MPI mode, an mpi4py communicator (`mpi_comm`): its
    members, which may differ from rank to rank (a Split): registered at
    init(process_sets=...), each distinct communicator becomes a set.
    process_set_id: None until the set is registered, then its id (0 is the
    global set, added sets count from 1)."""

    process_set_id = None
    ranks = None
    mpi_comm = None
    _set = None  # the _core.ProcessSet, once registered

    def __init__(self, ranks_or_comm):
        if is_mpi_comm(ranks_or_comm):
            self.mpi_comm = ranks_or_comm
            self.ranks = sorted(world_ranks(ranks_or_comm))
            return
        try:
            ranks = list(ranks_or_comm)
        except TypeError:
            raise ValueError("ProcessSet takes a list of global ranks or an mpi4py "
                             "communicator, got {!r}".format(ranks_or_comm)) from None
        if any(not isinstance(r, int) for r in ranks):
            raise ValueError("ProcessSet should be initialized with a list of process ranks, "
                             "got {!r}".format(ranks_or_comm))
        self.ranks = sorted(ranks)

    def _bind(self, core_set):
        self._set = core_set
        self.process_set_id = core_set.id
        self.ranks = list(core_set.ranks)

    def _invalidate(self):
        self._set = None
        self.process_set_id = None

    def _core_set(self):
        """The _core.ProcessSet to pass to operations (None: the global set)."""
        if self is global_process_set:
            return None
        if self._set is None:
            raise ValueError(
                "{} is not registered: pass it to hvd.init(process_sets=[...]) or "
                "hvd.add_process_set() (on every rank) first".format(self))
        return self._set

    def _checked(self):
        core_set = self._core_set()
        return _core.global_process_set() if core_set is None else core_set

    def size(self):
        """Number of ranks in the set; None while it is not registered."""
        if self.process_set_id is None:
            return None
        return self._checked().size()

    def rank(self):
        """This process's rank inside the set (-1 when it is not a member);
        None while the set is not registered. Operations still take global
        ranks (a broadcast's root_rank is hvd.rank() of the root)."""
        if self.process_set_id is None:
            return None
        return self._checked().rank()

    def included(self):
        """Whether this process is a member; None while not registered."""
        if self.process_set_id is None:
            return None
        return self._checked().included()

    def __str__(self):
        return "ProcessSet(process_set_id={}, ranks={})".format(self.process_set_id, self.ranks)

    __repr__ = __str__


# Every rank of the job (id 0); its ranks are filled in by init().
global_process_set = ProcessSet([])
global_process_set.process_set_id = 0

_registered = {}  # id -> the ProcessSet object registered under it (not the global set)


def core_set(process_set):
    """What _core operations take for `process_set`: None for the global
    set, else its _core.ProcessSet. ValueError if it is not registered."""
    if process_set is global_process_set:  # the common case, first
        return None
    if not isinstance(process_set, ProcessSet):
        raise TypeError("process_set must be a horovodcpp ProcessSet, got {!r}".format(
            process_set))
    return process_set._core_set()


def init_arguments(process_sets, job_world_ranks=(), job_comm=None):
    """init(process_sets=...): the ProcessSet objects to register at init
    (Horovod's "dynamic" means none: sets can always be added later).
    job_world_ranks: init's comm as MPI_COMM_WORLD ranks (empty: every
    rank); job_comm: init's mpi4py communicator, if it got one."""
    if process_sets is None or process_sets == "dynamic":
        return []
    sets = [ps if isinstance(ps, ProcessSet) else ProcessSet(ps) for ps in process_sets]
    # The global set always exists; Horovod lets it appear in the list.
    sets = [ps for ps in sets if ps is not global_process_set]
    if not any(ps.mpi_comm for ps in sets):
        return sets
    if job_world_ranks:
        if job_comm is None:
            raise NotImplementedError(
                "init(comm=<list of ranks>) with a ProcessSet of an mpi4py communicator: pass "
                "the job as an mpi4py communicator (init(comm=...)), or the sets as rank lists")
        for ps in sets:
            if ps.mpi_comm is not None:
                ps.ranks = sorted(_job_ranks(world_ranks(ps.mpi_comm), job_world_ranks))
    from mpi4py import MPI
    return _communicator_sets_everywhere(sets, job_comm or MPI.COMM_WORLD)


def _job_ranks(members, job_world_ranks):
    """MPI_COMM_WORLD ranks -> their ranks in a job of `job_world_ranks`."""
    outside = [r for r in members if r not in job_world_ranks]
    if outside:
        raise ValueError("a ProcessSet's communicator holds MPI_COMM_WORLD ranks {} that are not "
                         "in the job ({})".format(outside, list(job_world_ranks)))
    return [job_world_ranks.index(r) for r in members]


def _communicator_sets_everywhere(sets, job_comm):
    """Every rank must register the same sets, but a communicator (e.g. of a
    Split) has different members on different ranks: each becomes the sets
    of all its distinct memberships, in the order of the lowest rank holding
    each (Horovod's numbering). Collective over the job's communicator."""
    everyone = job_comm.allgather([ps.ranks if ps.mpi_comm else None for ps in sets])
    expanded = []
    for i, ps in enumerate(sets):
        if ps.mpi_comm is None:
            expanded.append(ps)
            continue
        seen = []
        for lists in everyone:
            if lists[i] not in seen:
                seen.append(lists[i])
        expanded.extend(ps if members == ps.ranks else ProcessSet(members) for members in seen)
    return expanded


def after_init(sets):
    """Binds the ProcessSet objects given to init() to the sets the core
    registered for them (ids 1, 2, ... in order)."""
    global_process_set.ranks = list(range(_core.size()))
    added = _core.process_sets()[1:]
    for ps, registered in zip(sets, added):
        ps._bind(registered)
        _registered[registered.id] = ps


def after_shutdown():
    """Sets belong to one init: shutdown() invalidates every added one."""
    for ps in _registered.values():
        ps._invalidate()
    _registered.clear()


def add_process_set(process_set):
    """Registers `process_set` (a ProcessSet or a list of global ranks) and
    returns it, with process_set_id set. Every rank of the job must call it,
    members or not, in the same order and with the same ranks
    (InvalidArgumentError on every rank otherwise; HorovodTimeoutError when a
    rank does not call within HOROVODCPP_PROCESS_SET_TIMEOUT_SECONDS). A set
    with the same ranks as a registered one, the global set included, is an
    InvalidArgumentError (a ValueError)."""
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    if process_set.process_set_id is not None:
        raise ValueError("{} is already registered".format(process_set))
    if process_set.mpi_comm is not None:
        # Ranks would hold different communicators; init() reconciles them.
        raise ValueError("a ProcessSet of an MPI communicator is registered by "
                         "hvd.init(process_sets=[...]); add_process_set takes a list of ranks")
    registered = _core.add_process_set(process_set.ranks)
    process_set._bind(registered)
    _registered[registered.id] = process_set
    return process_set


def remove_process_set(process_set):
    """Unregisters `process_set` (every rank calls it, like add_process_set)
    and returns True; operations still pending on it fail. The global set
    is never removed: False."""
    if process_set.process_set_id == 0:
        return False
    core = core_set(process_set)
    _core.remove_process_set(core)
    _registered.pop(process_set.process_set_id, None)
    process_set._invalidate()
    return True
