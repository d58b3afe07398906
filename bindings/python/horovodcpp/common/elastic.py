"""Elastic training for every front end, as horovod.common.elastic: the
State objects a training function keeps its progress in, and the loop
behind hvd.elastic.run that carries it across membership changes.

When a rank dies, every survivor's pending operation fails with a
HorovodInternalError (RankFailureError): run() restores the state of the
last commit(), re-initializes (the next membership hvdrun publishes: ranks
renumbered, the size may differ), has every rank take the state of the new
rank 0 (a survivor) with sync(), and calls the function again. When hvdrun
adds ranks, the next commit() (or check_host_updates()) raises
HostsUpdatedInterrupt on every rank alike: the same, without the restore.
"""
import functools

from horovodcpp import _core
from horovodcpp.common.basics import HorovodInternalError, InvalidArgumentError, MismatchError


class HostsUpdatedInterrupt(RuntimeError):
    """The job's membership changed (hvdrun added or removed ranks): every
    rank resets and synchronizes its state, without restoring the last
    commit. skip_sync is accepted as in Horovod; here state is always
    synchronized after a reset, so that new ranks receive it."""

    def __init__(self, skip_sync=False):
        super().__init__("the job's hosts were updated")
        self.skip_sync = skip_sync


class State(object):
    """State kept consistent across the ranks of an elastic job.

    bcast_object: function(obj) -> rank 0's obj on every rank.
    get_rank: function() -> this process's rank.
    """

    def __init__(self, bcast_object, get_rank):
        self._bcast_object = bcast_object
        self._rank = get_rank
        self._reset_callbacks = []

    def register_reset_callbacks(self, callbacks):
        """Functions called after every reset (ranks added or removed), once
        horovodcpp is initialized again and before the state is synchronized;
        e.g. to scale the learning rate with the new size()."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def commit(self):
        """Saves the state (what a failure rolls back to), then checks for
        host updates (HostsUpdatedInterrupt). Commits copy the state: commit
        every few batches rather than every one when the state is large."""
        self.save()
        self.check_host_updates()

    def check_host_updates(self):
        """Raises HostsUpdatedInterrupt on every rank when hvdrun has
        published a new membership. Collective: rank 0 asks hvdrun's store
        and broadcasts the answer, so that every rank raises alike."""
        if not _core.elastic_enabled():
            return
        updated = _core.elastic_hosts_updated() if self._rank() == 0 else False
        if self._bcast_object(updated):
            raise HostsUpdatedInterrupt(False)

    def save(self):
        """Saves the state in memory."""
        raise NotImplementedError()

    def restore(self):
        """Goes back to the last saved state."""
        raise NotImplementedError()

    def sync(self):
        """Makes every rank's state rank 0's."""
        raise NotImplementedError()

    def reset(self):
        """Called after a reset, before the callbacks and sync()."""


class ObjectState(State):
    """State of plain Python objects, given as keyword arguments and kept as
    attributes (state.epoch, state.batch, ...)."""

    def __init__(self, bcast_object, get_rank, **kwargs):
        self._bcast_object = bcast_object
        self._saved_state = kwargs
        self._set_attrs()
        super(ObjectState, self).__init__(bcast_object=bcast_object, get_rank=get_rank)

    def save(self):
        self._saved_state = {attr: getattr(self, attr) for attr in self._saved_state}

    def restore(self):
        self._set_attrs()

    def sync(self):
        if self._saved_state:
            self._saved_state = self._bcast_object(self._saved_state)
            self._set_attrs()

    def _set_attrs(self):
        for attr, value in self._saved_state.items():
            setattr(self, attr, value)


def _recoverable(error):
    """A failure of the job (a rank died, a peer timed out), not of the
    call: invalid arguments and mismatched submissions would only fail
    again after a reset."""
    return not isinstance(error, (InvalidArgumentError, MismatchError))


def run_fn(func, reset):
    """Wraps func(state, ...) in the elastic loop: sync, run; on a failure,
    restore, reset, sync and run again; on a host update, reset, sync and
    run again. `reset` re-initializes horovodcpp (shutdown, then init)."""

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        while True:
            try:
                state.sync()
                return func(state, *args, **kwargs)
            except HorovodInternalError as e:
                if not _recoverable(e):
                    raise
                state.restore()
            except HostsUpdatedInterrupt:
                pass
            reset()
            state.on_reset()

    return wrapper
