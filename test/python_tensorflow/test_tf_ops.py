"""horovodcpp.tensorflow collectives, eagerly and inside tf.function: every
op and dtype against a local reference, errors raised on every rank, the
object helpers and the basics."""
import numpy as np
import pytest
import tensorflow as tf

import horovodcpp.tensorflow as hvd
from reference import DTYPES, assert_equal, every_rank, gather_all, rank_tensor, run

OPS = [hvd.Sum, hvd.Average, hvd.Min, hvd.Max, hvd.Product]


def reduce_reference(tensors, op, dtype):
    if dtype == tf.bool:
        stacked = tf.stack(tensors)
        return (tf.reduce_any if op in (hvd.Sum, hvd.Max) else tf.reduce_all)(stacked, 0)
    wide = tf.stack([tf.cast(t, tf.int64 if dtype.is_integer else tf.float64) for t in tensors])
    if op == hvd.Average:
        total = tf.reduce_sum(wide, 0)
        result = (tf.truncatediv(total, len(tensors)) if dtype.is_integer
                  else total / len(tensors))
    else:
        result = {hvd.Sum: tf.reduce_sum, hvd.Min: tf.reduce_min, hvd.Max: tf.reduce_max,
                  hvd.Product: tf.reduce_prod}[op](wide, 0)
    return tf.cast(result, dtype)


def test_topology():
    assert hvd.is_initialized()
    assert 0 <= hvd.rank() < hvd.size()
    assert 0 <= hvd.local_rank() < hvd.local_size()
    assert 0 <= hvd.cross_rank() < hvd.cross_size()
    assert hvd.mpi_enabled() != hvd.gloo_enabled()
    assert hvd.global_process_set.size() == hvd.size()


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("op", OPS, ids=str)
def test_allreduce(mode, dtype, op):
    tensor = rank_tensor(hvd.rank(), [3, 5], dtype)
    name = "ar.{}.{}".format(dtype.name, op)
    if dtype == tf.bool and op == hvd.Average:
        with pytest.raises((hvd.InvalidArgumentError, tf.errors.OpError), match="Average"):
            run(mode, lambda t: hvd.allreduce(t, name=name, op=op), tensor)
        return
    expected = reduce_reference(every_rank(lambda r: rank_tensor(r, [3, 5], dtype)), op, dtype)
    result = run(mode, lambda t: hvd.allreduce(t, name=name, op=op), tensor)
    assert result.shape == tensor.shape
    assert_equal(result, expected)


def test_allreduce_scale_factors_compression_and_average_argument(mode):
    tensor = rank_tensor(hvd.rank(), [7])
    expected = 3.0 * sum(0.5 * t for t in every_rank(lambda r: rank_tensor(r, [7])))
    result = run(mode, lambda t: hvd.allreduce(t, op=hvd.Sum, prescale_factor=0.5,
                                               postscale_factor=3.0), tensor)
    np.testing.assert_allclose(result.numpy(), expected.numpy())
    mean = sum(every_rank(lambda r: rank_tensor(r, [7]))) / hvd.size()
    for compression in (hvd.Compression.fp16, hvd.Compression.bf16):
        result = run(mode, lambda t: hvd.allreduce(t, compression=compression), tensor)
        assert result.dtype == tf.float64
        np.testing.assert_allclose(result.numpy(), mean.numpy(), atol=2e-2)
    with pytest.warns(DeprecationWarning):
        summed = hvd.allreduce(tensor, average=False)
    np.testing.assert_allclose(summed.numpy(), sum(every_rank(lambda r: rank_tensor(r, [7]))))
    with pytest.raises(ValueError, match="supersedes"):
        hvd.allreduce(tensor, average=True, op=hvd.Sum)


def test_grouped_allreduce_mixed_dtypes(mode):
    tensors = [rank_tensor(hvd.rank(), [4], tf.float32), rank_tensor(hvd.rank(), [2, 3], tf.int32),
               rank_tensor(hvd.rank(), [5], tf.float64)]
    results = run(mode, lambda *ts: hvd.grouped_allreduce(list(ts), op=hvd.Sum), *tensors)
    for i, (t, result) in enumerate(zip(tensors, results)):
        expected = sum(every_rank(lambda r: rank_tensor(r, t.shape, t.dtype)))
        assert_equal(result, expected)
    assert hvd.grouped_allreduce([]) == []


def test_allreduce_indexed_slices(mode):
    rows = hvd.rank() + 1
    values = tf.fill([rows, 2], float(hvd.rank() + 1))
    slices = tf.IndexedSlices(values, tf.range(rows), dense_shape=tf.constant([4, 2]))

    def reduce(v, i):
        out = hvd.allreduce(tf.IndexedSlices(v, i, dense_shape=tf.constant([4, 2])))
        return out.values, out.indices
    out_values, out_indices = run(mode, reduce, slices.values, slices.indices)
    assert out_values.shape[0] == sum(r + 1 for r in range(hvd.size()))
    dense = tf.math.unsorted_segment_sum(out_values, out_indices, 4)
    expected = sum(tf.math.unsorted_segment_sum(tf.fill([r + 1, 2], float(r + 1)), tf.range(r + 1),
                                                4) for r in range(hvd.size())) / hvd.size()
    np.testing.assert_allclose(dense.numpy(), expected.numpy())
    with pytest.raises(NotImplementedError):
        hvd.allreduce(slices, op=hvd.Max)


@pytest.mark.parametrize("dtype", DTYPES + [tf.uint32, tf.complex64], ids=lambda d: d.name)
def test_allgather_ragged(mode, dtype):
    def make(r):  # uint32 and complex64 (moved as bytes) from int32 values
        base = tf.int32 if dtype in (tf.uint32, tf.complex64) else dtype
        return tf.cast(rank_tensor(r, [r + 1, 3], base), dtype)
    result = run(mode, lambda t: hvd.allgather(t, name="ag." + dtype.name), make(hvd.rank()))
    assert_equal(result, tf.concat(every_rank(make), 0))


def test_grouped_allgather_and_scalars(mode):
    tensors = [rank_tensor(hvd.rank(), [hvd.rank() + 1]), rank_tensor(hvd.rank(), [], tf.int64)]
    results = run(mode, lambda *ts: hvd.grouped_allgather(list(ts)), *tensors)
    assert_equal(results[0], tf.concat(every_rank(lambda r: rank_tensor(r, [r + 1])), 0))
    assert_equal(results[1], tf.stack(every_rank(lambda r: rank_tensor(r, [], tf.int64))))


@pytest.mark.parametrize("dtype", DTYPES + [tf.uint32], ids=lambda d: d.name)
def test_broadcast_every_root(mode, dtype):
    for root in range(hvd.size()):
        tensor = tf.cast(rank_tensor(hvd.rank(), [2, 3], tf.int32 if dtype == tf.uint32 else dtype),
                         dtype)
        result = run(mode, lambda t: hvd.broadcast(t, root, name="bc.{}".format(root)), tensor)
        expected = tf.cast(rank_tensor(root, [2, 3], tf.int32 if dtype == tf.uint32 else dtype),
                           dtype)
        assert_equal(result, expected)


@pytest.mark.parametrize("dtype", [tf.uint8, tf.bfloat16, tf.float32, tf.bool],
                         ids=lambda d: d.name)
def test_alltoall(mode, dtype):
    n, me = hvd.size(), hvd.rank()
    # Rank r sends j + 1 rows to rank j; row values name the sender.
    splits = tf.constant([j + 1 for j in range(n)], dtype=tf.int64)
    rows = sum(j + 1 for j in range(n))
    tensor = tf.cast(tf.fill([rows, 2], me % 2 if dtype == tf.bool else me + 1), dtype)
    output, received = run(mode, lambda t, s: hvd.alltoall(t, splits=s), tensor, splits)
    assert received.dtype == tf.int64
    np.testing.assert_array_equal(received.numpy(), [me + 1] * n)
    expected = tf.concat([tf.cast(tf.fill([me + 1, 2], r % 2 if dtype == tf.bool else r + 1),
                                  dtype) for r in range(n)], 0)
    assert_equal(output, expected)
    equal = run(mode, lambda t: hvd.alltoall(t), tf.fill([2 * n, 1], float(me)))
    np.testing.assert_array_equal(equal.numpy().ravel(), np.repeat(np.arange(n), 2))


@pytest.mark.parametrize("dtype", [tf.int32, tf.float16, tf.bfloat16, tf.float32, tf.float64],
                         ids=lambda d: d.name)
@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average], ids=str)
def test_reducescatter(mode, dtype, op):
    n, me = hvd.size(), hvd.rank()
    rows = 2 * n + 1  # not divisible: the first rank gets one row more
    tensor = rank_tensor(me, [rows, 3], dtype)
    result = run(mode, lambda t: hvd.reducescatter(t, op=op), tensor)
    reduced = reduce_reference(every_rank(lambda r: rank_tensor(r, [rows, 3], dtype)), op, dtype)
    shares = [rows // n + (1 if r < rows % n else 0) for r in range(n)]
    start = sum(shares[:me])
    assert_equal(result, reduced[start:start + shares[me]])
    grouped = run(mode, lambda t: hvd.grouped_reducescatter([t, t], op=op), tensor)
    assert_equal(grouped[1], reduced[start:start + shares[me]])


def test_mismatch_raises_on_every_rank(mode):
    tensor = tf.zeros([hvd.rank() + 1])
    with pytest.raises((hvd.MismatchError, tf.errors.OpError), match="shape differs"):
        run(mode, lambda t: hvd.allreduce(t, name="mismatch"), tensor)


def test_unsupported_dtype_and_process_sets():
    with pytest.raises(ValueError, match="does not support"):
        hvd.allreduce(tf.constant([1], tf.uint32))
    with pytest.raises(NotImplementedError):
        hvd.allreduce(tf.zeros([1]), process_set=hvd.ProcessSet([0]))


def test_barrier_join_and_objects(mode):
    run(mode, hvd.barrier)
    assert int(run(mode, hvd.join)) in range(hvd.size())
    obj = {"rank": hvd.rank(), "data": list(range(hvd.rank() + 2))}
    assert hvd.broadcast_object(obj, root_rank=hvd.size() - 1)["rank"] == hvd.size() - 1
    gathered = hvd.allgather_object(obj)
    assert [o["rank"] for o in gathered] == list(range(hvd.size()))


def test_broadcast_variables(mode):
    variables = [tf.Variable(rank_tensor(hvd.rank(), [3, 2])),
                 tf.Variable(tf.cast(rank_tensor(hvd.rank(), [4], tf.int32), tf.uint32))]
    run(mode, lambda: hvd.broadcast_variables(variables, root_rank=0))
    values = gather_all([v.numpy() for v in variables])
    for per_rank in values:
        for got, want in zip(per_rank, values[0]):
            np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(values[0][0], rank_tensor(0, [3, 2]).numpy())
    with pytest.raises(RuntimeError, match="eager"):
        hvd.broadcast_global_variables(0)
