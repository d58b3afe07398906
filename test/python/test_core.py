"""horovodcpp._core used directly: NumPy arrays (DLPack), objects with
only the buffer protocol, typed errors, wait timeouts, the GIL released
while waiting, and handles dropped before their operation finished."""
import array
import threading
import time

import numpy as np
import pytest

from horovodcpp import _core

NUMPY_DTYPES = [np.uint8, np.int8, np.uint16, np.int16, np.int32, np.int64, np.float16,
                np.float32, np.float64]


def test_errors_are_a_hierarchy():
    assert issubclass(_core.MismatchError, _core.HorovodInternalError)
    assert issubclass(_core.HorovodInternalError, RuntimeError)
    assert issubclass(_core.InvalidArgumentError, ValueError)
    assert issubclass(_core.HorovodTimeoutError, TimeoutError)


@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=lambda d: d.__name__)
def test_numpy_allreduce_and_allgather(dtype):
    n, me = _core.size(), _core.rank()
    values = np.arange(6, dtype=dtype).reshape(2, 3) + me
    _core.allreduce_async(values, name="np.ar.{}".format(dtype.__name__),
                          op=_core.ReduceOp.Sum).wait()
    expected = sum(np.arange(6).reshape(2, 3) + r for r in range(n))
    np.testing.assert_array_equal(values, expected.astype(dtype))

    work = _core.allgather_async(np.full([me + 1], me, dtype=dtype), "np.ag.{}".format(dtype.__name__))
    gathered = np.from_dlpack(work.output())
    assert gathered.dtype == dtype
    np.testing.assert_array_equal(gathered, np.repeat(np.arange(n), np.arange(n) + 1).astype(dtype))


def test_buffer_protocol_objects():
    me = _core.rank()
    data = bytearray(b"root" if me == 0 else b"....")
    _core.broadcast_async(data, 0, "bytes").wait()
    assert data == b"root"
    ints = array.array("i", [me, 2 * me])
    _core.allreduce_async(ints, name="array", op=_core.ReduceOp.Max).wait()
    assert list(ints) == [_core.size() - 1, 2 * (_core.size() - 1)]
    halves = np.full([3], 1.5, dtype=np.float16)
    _core.allreduce_async(memoryview(halves), name="memoryview", op=_core.ReduceOp.Sum).wait()
    np.testing.assert_array_equal(halves, np.full([3], 1.5 * _core.size(), dtype=np.float16))
    flags = np.array([me == 0, False])
    _core.allreduce_async(memoryview(flags), name="bools", op=_core.ReduceOp.Max).wait()
    assert flags.tolist() == [True, False]
    with pytest.raises(ValueError, match="contiguous"):
        _core.allreduce_async(memoryview(np.zeros([4, 4]))[::2], name="strided")
    with pytest.raises(BufferError):
        _core.allreduce_async(bytes(4), name="read_only")  # the result has nowhere to go


def test_dtype_override_and_bad_inputs():
    flags = np.array([_core.rank() == 0, False]).view(np.uint8)
    _core.allreduce_async((flags, "bool"), name="override", op=_core.ReduceOp.Sum).wait()
    assert flags.tolist() == [1, 0]  # logical OR, not a sum
    with pytest.raises(ValueError, match="element sizes"):
        _core.allreduce_async((np.zeros(2, np.float32), "float64"), name="bad_override")
    with pytest.raises(ValueError, match="unsupported"):
        _core.allreduce_async(np.zeros(2, np.complex64), name="complex")
    with pytest.raises(TypeError, match="expected a tensor"):
        _core.allreduce_async(3.0, name="not_a_tensor")


def test_wait_timeout_and_gil_released():
    # The last rank submits late: the others time out, then wait again, and
    # a Python thread keeps running while they wait.
    late = _core.rank() == _core.size() - 1
    if late:
        time.sleep(0.5)
    values = np.ones(4, np.float32)
    work = _core.allreduce_async(values, name="late", op=_core.ReduceOp.Sum)
    ticks = []
    ticker = threading.Thread(target=lambda: [ticks.append(time.sleep(0.01)) for _ in range(20)])
    ticker.start()
    if not late and _core.size() > 1:
        with pytest.raises(_core.HorovodTimeoutError):
            work.wait(timeout=0.05)
    work.wait()
    ticker.join()
    assert len(ticks) == 20
    np.testing.assert_array_equal(values, np.full(4, _core.size(), np.float32))


def test_dropped_handles_keep_their_tensors():
    # Rank 0 drops its handles and arrays before the last rank has submitted:
    # the operations still complete into memory kept alive by _core.
    late = _core.rank() == _core.size() - 1
    if late:
        time.sleep(0.3)
    for i in range(10):
        _core.allreduce_async(np.ones(1000, np.float64), name="dropped.{}".format(i))
    _core.barrier()
    values = np.ones(3)
    _core.allreduce_async(values, name="after_drop", op=_core.ReduceOp.Sum).wait()
    assert values.tolist() == [float(_core.size())] * 3
