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
import enum
import functools
import threading

from horovodcpp import _core
from horovodcpp.common.basics import HorovodInternalError, InvalidArgumentError, MismatchError
from horovodcpp.common.exceptions import HostsUpdatedInterrupt


class HostUpdateResult(enum.IntFlag):
    """What a host update did (Horovod's flags)."""
    no_update = 0
    removed = 1
    added = 2
    mixed = removed | added


class WorkerNotificationManager(object):
    """Horovod's hub of host-update notifications: the states of running
    elastic functions listen, and handle_hosts_updated() tells them. Horovod
    runs a service on each worker that its driver calls; here rank 0 asks
    hvdrun's store at each commit instead, so init() starts nothing, and
    handle_hosts_updated() is for code that learns of updates by itself."""

    def __init__(self):
        self._lock = threading.Lock()
        self._listeners = set()

    def init(self, rendezvous_addr=None, rendezvous_port=None, nic=None, hostname=None,
             local_rank=None):
        del rendezvous_addr, rendezvous_port, nic, hostname, local_rank

    def register_listener(self, listener):
        with self._lock:
            self._listeners.add(listener)

    def remove_listener(self, listener):
        with self._lock:
            self._listeners.discard(listener)

    def handle_hosts_updated(self, timestamp, update_res):
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener.on_hosts_updated(timestamp, update_res)


notification_manager = WorkerNotificationManager()


class State(object):
    """State kept consistent across the ranks of an elastic job.

    bcast_object: function(obj) -> rank 0's obj on every rank.
    get_rank: function() -> this process's rank.
    """

    def __init__(self, bcast_object, get_rank):
        self._bcast_object = bcast_object
        self._rank = get_rank
        self._reset_callbacks = []
        self._host_messages = []  # (timestamp, HostUpdateResult), from on_hosts_updated
        self._last_updated_timestamp = 0

    def register_reset_callbacks(self, callbacks):
        """Functions called after every reset (ranks added or removed), once
        horovodcpp is initialized again and before the state is synchronized;
        e.g. to scale the learning rate with the new size()."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        self._host_messages = []
        self.reset()
        for callback in self._reset_callbacks:
            callback()

    def commit(self):
        """Saves the state (what a failure rolls back to), then checks for
        host updates (HostsUpdatedInterrupt). Commits copy the state: commit
        every few batches rather than every one when the state is large."""
        self.save()
        self.check_host_updates()

    def on_hosts_updated(self, timestamp, update_res):
        """A host update at `timestamp` (notification_manager calls it): the
        next commit() or check_host_updates() raises HostsUpdatedInterrupt."""
        self._host_messages.append((timestamp, update_res))

    def check_host_updates(self):
        """Raises HostsUpdatedInterrupt when hvdrun has published a new
        membership or on_hosts_updated() reported a newer update. In an
        elastic job it is collective: rank 0 decides (it also asks hvdrun's
        store) and broadcasts, so that every rank raises alike."""
        previous = newest = self._last_updated_timestamp
        update = HostUpdateResult.no_update
        for timestamp, result in self._host_messages:
            if timestamp > newest:
                newest, update = timestamp, update | result
        self._host_messages = []
        if _core.elastic_enabled():
            if self._rank() == 0 and _core.elastic_hosts_updated():
                # hvdrun does not say whether hosts came or went.
                newest, update = max(newest, previous + 1), HostUpdateResult.mixed
            # Rank 0's view, so that ranks started later agree with it.
            previous, newest, update = self._bcast_object((previous, newest, update))
        self._last_updated_timestamp = newest
        if newest > previous:
            raise HostsUpdatedInterrupt(update == HostUpdateResult.removed)

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
        notification_manager.init()
        notification_manager.register_listener(state)
        try:
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
        finally:
            notification_manager.remove_listener(state)

    return wrapper
