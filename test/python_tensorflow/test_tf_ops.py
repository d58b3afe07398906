"""horovodcpp.tensorflow collectives, eagerly and inside tf.function: every
op and dtype against a local reference, errors raised on every rank as
Horovod's tf.errors, many collectives in flight at once, the object
helpers, the topology ops and the basics."""
import numpy as np
import pytest
import tensorflow as tf

import horovodcpp.tensorflow as hvd
from conftest import INTER_OP_THREADS
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
        with pytest.raises(tf.errors.InvalidArgumentError, match="Average"):
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


def test_mismatch_is_failed_precondition_on_every_rank(mode):
    # As in Horovod (horovod/tensorflow/mpi_ops.cc): ranks that disagree are
    # a failed precondition, eagerly too.
    tensor = tf.zeros([hvd.rank() + 1])
    with pytest.raises(tf.errors.FailedPreconditionError, match="shape differs"):
        run(mode, lambda t: hvd.allreduce(t, name="mismatch"), tensor)
    other = tf.zeros([2], tf.float32 if hvd.rank() == 0 else tf.float64)
    with pytest.raises(tf.errors.FailedPreconditionError, match="dtype differs"):
        run(mode, lambda t: hvd.allgather(t, name="dtype_mismatch"), other)


def test_bad_input_is_invalid_argument_on_every_rank(mode):
    with pytest.raises(tf.errors.InvalidArgumentError, match="root rank"):
        run(mode, lambda t: hvd.broadcast(t, hvd.size(), name="bad_root"), tf.zeros([2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="sum to"):
        run(mode, lambda t: hvd.alltoall(t, splits=[1] * hvd.size(), name="bad_splits"),
            tf.zeros([hvd.size() + 1, 1]))


def test_unsupported_dtype():
    with pytest.raises(TypeError, match="does not support"):
        hvd.allreduce(tf.constant([1], tf.uint32))


COLLECTIVES = 32 * INTER_OP_THREADS  # independent ones per graph


def test_many_independent_collectives_do_not_stall(mode):
    tensors = [rank_tensor(hvd.rank(), [3], seed=i) for i in range(COLLECTIVES)]
    results = run(mode, lambda *ts: [hvd.allreduce(t, op=hvd.Sum) for t in ts], *tensors)
    for i, result in enumerate(results):
        assert_equal(result, sum(every_rank(lambda r: rank_tensor(r, [3], seed=i))))


def test_many_collectives_in_an_unordered_backward_function():
    """TensorFlow builds the backward function of a tf.function that an eager
    tape differentiates without ordering its ops: there the collectives start
    in any order on each rank, on INTER_OP_THREADS threads."""
    variables = [tf.Variable(rank_tensor(hvd.rank(), [3], seed=i)) for i in range(COLLECTIVES)]
    weights = [rank_tensor(hvd.rank(), [3], seed=1000 + i) for i in range(COLLECTIVES)]

    @tf.function
    def doubled_sums(*xs):
        return [hvd.allreduce(2.0 * x, op=hvd.Sum) for x in xs]
    with tf.GradientTape() as tape:
        outputs = doubled_sums(*variables)
        objective = tf.add_n([tf.reduce_sum(o * w) for o, w in zip(outputs, weights)])
    grads = tape.gradient(objective, variables)
    for i, (output, grad) in enumerate(zip(outputs, grads)):
        assert_equal(output, 2.0 * sum(every_rank(lambda r: rank_tensor(r, [3], seed=i))))
        # d/dx of sum over ranks of <w_r, 2 * sum(x)>: twice the sum of the weights.
        assert_equal(grad, 2.0 * sum(every_rank(lambda r: rank_tensor(r, [3], seed=1000 + i))))


def test_topology_ops_run_when_the_graph_runs():
    @tf.function
    def topology():
        return (hvd.rank_op(), hvd.size_op(), hvd.local_rank_op(), hvd.local_size_op(),
                hvd.process_set_included_op(), hvd.process_set_included_op(12345))
    values = [int(v) for v in topology()]
    assert values == [hvd.rank(), hvd.size(), hvd.local_rank(), hvd.local_size(), 1, -3]
    assert all(v.dtype == tf.int32 for v in topology())


def test_barrier_join_and_objects(mode):
    run(mode, hvd.barrier)
    assert int(run(mode, hvd.join)) in range(hvd.size())
    obj = {"rank": hvd.rank(), "data": list(range(hvd.rank() + 2))}
    assert hvd.broadcast_object(obj, root_rank=hvd.size() - 1)["rank"] == hvd.size() - 1
    gathered = hvd.allgather_object(obj)
    assert [o["rank"] for o in gathered] == list(range(hvd.size()))
    broadcast_fn = hvd.broadcast_object_fn(root_rank=hvd.size() - 1, name="fn")
    assert broadcast_fn(obj) == {"rank": hvd.size() - 1, "data": list(range(hvd.size() + 1))}
    assert broadcast_fn([hvd.rank()]) == [hvd.size() - 1]


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
