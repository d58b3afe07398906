"""Process sets, as in Horovod. The C++ core runs every collective on all
ranks for now, so only the global process set exists; the arguments are
accepted everywhere so that code written for Horovod runs unchanged, and
anything else raises NotImplementedError instead of silently using every
rank."""
from horovodcpp import _core

_NOT_YET = ("process sets other than the global one are not supported yet: "
            "the horovodcpp C++ core has no process sets")


class ProcessSet:
    """A subset of the ranks that collectives can be limited to."""

    def __init__(self, ranks_or_comm):
        if not isinstance(ranks_or_comm, (list, tuple, range)):
            raise NotImplementedError("ProcessSet from an MPI communicator: " + _NOT_YET)
        self._ranks = sorted(int(r) for r in ranks_or_comm)
        self.process_set_id = None  # assigned by add_process_set

    @property
    def ranks(self):
        if self is global_process_set:
            return list(range(_core.size()))
        return list(self._ranks)

    def _check_global(self):
        if self is not global_process_set:
            raise NotImplementedError(_NOT_YET)

    def size(self):
        self._check_global()
        return _core.size()

    def rank(self):
        self._check_global()
        return _core.rank()

    def included(self):
        self._check_global()
        return True

    def __repr__(self):
        if self is global_process_set:
            return "ProcessSet(global)"
        return "ProcessSet(process_set_id={}, ranks={})".format(self.process_set_id, self._ranks)


global_process_set = ProcessSet([])
global_process_set.process_set_id = 0


def check(process_set):
    """Raises NotImplementedError unless `process_set` is the global set."""
    if process_set is not global_process_set:
        raise NotImplementedError(_NOT_YET)


def check_init_argument(process_sets):
    """init(process_sets=...): only the global set (or nothing) for now."""
    if process_sets is None:
        return
    if process_sets == "dynamic" or any(ps is not global_process_set for ps in process_sets):
        raise NotImplementedError(_NOT_YET)


def add_process_set(process_set):
    """Registers a process set with every rank. Not supported yet."""
    raise NotImplementedError(_NOT_YET)


def remove_process_set(process_set):
    """Unregisters a process set. Not supported yet."""
    raise NotImplementedError(_NOT_YET)
