"""Handles of asynchronous operations, as in Horovod: an int that poll()
and synchronize() take. synchronize() returns the operation's result.
Allreduces of dense contiguous tensors (most of a training step's) keep
their handles in the core's table (_core.synchronize_handle); the others
are kept here, numbered from the same counter (_core.new_handle)."""
from horovodcpp import _core
from horovodcpp.torch import compiling

_pending = {}  # handle -> (works, finish, result): finish() builds the result, or is None


def register(works, finish):
    """A new handle for the _core.Work objects `works`; once they are all
    done, synchronize() returns finish()."""
    handle = _core.new_handle()
    _pending[handle] = (works, finish, None)
    return handle


def register_tensor(work, tensor):
    """register([work], lambda: tensor) without the lambda."""
    handle = _core.new_handle()
    _pending[handle] = ((work,), None, tensor)
    return handle


def poll(handle):
    """True once the operation of `handle` has completed (successfully or
    not); synchronize() then returns without blocking."""
    done = _core.poll_handle(handle)
    if done is not None:
        return done
    if handle not in _pending:
        raise ValueError("unknown or already synchronized handle {}".format(handle))
    return all(work.poll() for work in _pending[handle][0])


def synchronize(handle):
    """Waits for the operation of `handle` (without holding the GIL) and
    returns its output; raises its error (a HorovodInternalError) on failure.
    Returns None for a handle already synchronized. Under torch.compile a
    handle is the async operator's outputs and their ids (compiled_ops.py)."""
    if not isinstance(handle, int):  # outputs then their ids (compiled_ops.py)
        outputs, ids = handle[:len(handle) // 2], handle[len(handle) // 2:]
        for output, handle_id in zip(outputs, ids):
            compiling.OPS.wait_(output, handle_id)
        return outputs[0] if len(outputs) == 1 else list(outputs)
    result = _core.synchronize_handle(handle)
    if result is not None:
        return result
    entry = _pending.pop(handle, None)
    if entry is None:
        return None
    works, finish, result = entry
    for work in works:
        work.wait()
    return result if finish is None else finish()
