"""The Work objects the horovodcpp process group returns: torch.distributed's
Work over one or more _core.Work handles.

wait() waits for the core's handles (without the GIL) and then runs the
operation's finish step (copying a gathered result into the caller's
tensors, and the like) on the waiting thread. get_future() returns a
torch.futures.Future that one completion thread per process fulfils: the
core pushes the operation's token into a _core.CompletionQueue when it is
done (the coordinator thread never takes the GIL), and the thread runs the
finish step and sets the future's result, so DDP's communication hooks and
funcol's waits work without anybody calling wait()."""
import datetime
import itertools
import threading

import torch
import torch.distributed as dist

from horovodcpp import _core


def as_dist_error(error, what):
    """torch.distributed's exception for a failed horovodcpp operation: a
    DistBackendError (a RuntimeError) with horovodcpp's message, which names
    the ranks and the field that differ, or the rank that failed."""
    if isinstance(error, dist.DistBackendError):
        return error
    return dist.DistBackendError("horovodcpp {}: {}".format(what, error))


def timed_out(what, seconds):
    return dist.DistBackendError(
        "horovodcpp {}: not complete after {:g} s (the process group's timeout): a rank has not "
        "called it, or waits elsewhere".format(what, seconds))


def _seconds(timeout):
    if timeout is None:
        return None
    if isinstance(timeout, datetime.timedelta):
        seconds = timeout.total_seconds()
    else:
        seconds = float(timeout)
    return seconds if seconds > 0 else None


class Work(dist.Work):
    """One collective of the process group. `works`: its _core.Work handles;
    `finish()`, run once they are all done, returns the result (a list of
    tensors: the future's value), or None when `result` is it already;
    `timeout`: the group's, in seconds."""

    def __init__(self, works, finish, what, timeout, result=None):
        super().__init__()
        self._works = works
        self._finish = finish
        self._what = what
        self._timeout = timeout
        self._lock = threading.Lock()
        self._result = result
        self._error = None
        self._finished = False
        self._future = None

    def _run_finish(self):
        """Runs finish() once, on whichever thread gets here first, after
        every handle is done."""
        with self._lock:
            if self._finished:
                return
            try:
                for work in self._works:
                    work.wait()
                if self._finish is not None:
                    self._result = self._finish()
            except Exception as error:  # noqa: BLE001  (kept for every waiter)
                self._error = as_dist_error(error, self._what)
            self._finished = True

    def wait(self, timeout=None):
        if not self._finished:
            seconds = _seconds(timeout) or self._timeout
            try:
                for work in self._works:
                    work.wait(seconds)
            except _core.HorovodTimeoutError:
                raise timed_out(self._what, seconds) from None
            except Exception:  # noqa: BLE001  (_run_finish keeps it, raised below)
                pass
            self._run_finish()
        if self._error is not None:
            raise self._error
        return True

    def is_completed(self):
        return self._finished or all(work.poll() for work in self._works)

    def is_success(self):
        if not self.is_completed():
            raise RuntimeError("horovodcpp {}: not completed yet".format(self._what))
        self._run_finish()
        return self._error is None

    def exception(self):
        if self.is_completed():
            self._run_finish()
        return self._error

    def result(self):
        self.wait()
        return self._result

    def synchronize(self):
        self.wait()

    def get_future(self):
        if self._future is None:
            self._future = torch.futures.Future()
            if self.is_completed():
                _fulfil(self, self._future)
            else:
                _completer().watch(self)
        return self._future


def _fulfil(work, future):
    work._run_finish()
    if work._error is not None:
        future.set_exception(work._error)
    else:
        future.set_result(work._result)


class _Completer:
    """Threads that fulfil the futures of Works once the core is done. A
    future's callbacks run on the thread that fulfils it, and may wait for
    another of these futures (PowerSGD's hook does): whenever the last idle
    thread takes a completion, another is started, so one always waits on
    the queue (their number grows only with such nesting)."""

    def __init__(self):
        self._queue = _core.CompletionQueue()
        self._tokens = itertools.count()
        self._watched = {}  # token -> Work
        self._lock = threading.Lock()
        self._idle = 0
        self._start_thread()

    def _start_thread(self):
        with self._lock:
            self._idle += 1
        threading.Thread(target=self._run, name="horovodcpp-futures", daemon=True).start()

    def watch(self, work):
        token = next(self._tokens)
        self._watched[token] = work
        # Its last handle finishing last is the common case; every one is
        # waited for anyway before the finish step runs.
        _core.notify_when_done(work._works[-1], self._queue, token)

    def _run(self):
        while True:
            tokens = self._queue.take(None, 1)
            with self._lock:
                self._idle -= 1
                starve = self._idle == 0
            if starve:
                self._start_thread()
            for token in tokens:
                work = self._watched.pop(token, None)
                if work is not None and not work._future.done():
                    _fulfil(work, work._future)
            with self._lock:
                self._idle += 1


_state = {"completer": None, "lock": threading.Lock()}


def _completer():
    with _state["lock"]:
        if _state["completer"] is None:
            _state["completer"] = _Completer()
        return _state["completer"]


def completed(result):
    """A Work that is already done, with `result`."""
    work = Work((), None, "done", None, result)
    work._finished = True
    return work
