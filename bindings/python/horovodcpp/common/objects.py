"""broadcast_object and allgather_object for any front end: the pickled
object travels as a NumPy byte array (writable: DLPack cannot export
read-only arrays), so no framework tensor is needed."""
import pickle

import numpy as np

from horovodcpp import _core


def _payload(obj):
    return np.frombuffer(bytearray(pickle.dumps(obj)), dtype=np.uint8)


def broadcast_object(obj, root_rank=0, name=None):
    """Returns root_rank's `obj` (any picklable object) on every rank."""
    name = name or type(obj).__name__
    is_root = _core.rank() == root_rank
    payload = _payload(obj) if is_root else None
    length = np.array([payload.size if is_root else 0], dtype=np.int64)
    _core.broadcast_async(length, root_rank, "broadcast.{}.sz".format(name)).wait()
    if not is_root:
        payload = np.empty(int(length[0]), dtype=np.uint8)
    _core.broadcast_async(payload, root_rank, "broadcast.{}.t".format(name)).wait()
    return obj if is_root else pickle.loads(payload.tobytes())


def allgather_object(obj, name=None):
    """Returns the list of every rank's `obj` (picklable), in rank order."""
    name = name or type(obj).__name__
    payload = _payload(obj)
    sizes = _core.allgather_async(np.array([payload.size], dtype=np.int64),
                                  "allgather.{}.sz".format(name))
    data = _core.allgather_async(payload, "allgather.{}.t".format(name))
    offsets = np.concatenate([[0], np.cumsum(np.from_dlpack(sizes.output()))])
    gathered = np.from_dlpack(data.output()).tobytes()
    return [pickle.loads(gathered[offsets[i]:offsets[i + 1]]) for i in range(len(offsets) - 1)]
