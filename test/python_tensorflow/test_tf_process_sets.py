"""Process sets in every horovodcpp.tensorflow operation, eagerly and in
tf.function: two sets split the job (the first size - 1 ranks, and the last
rank) and each rank works in its own, against a local reference over the
set's members; ranks outside a set are refused; the gradient helpers
combine over the set only."""
import keras
import numpy as np
import pytest
import tensorflow as tf

import horovodcpp.tensorflow as hvd
from reference import assert_equal, check_gradient, rank_tensor, run


@pytest.fixture(scope="module")
def sets():
    """(this rank's set, the other set)."""
    if hvd.size() < 2:
        pytest.skip("needs two ranks")
    first = hvd.add_process_set(list(range(hvd.size() - 1)))
    last = hvd.add_process_set([hvd.size() - 1])
    yield (first, last) if first.included() else (last, first)
    hvd.remove_process_set(last)
    hvd.remove_process_set(first)


def test_reductions_on_a_process_set(mode, sets):
    mine, _ = sets
    members = mine.ranks

    def expected(op, dtype=tf.float64, shape=(3,)):
        total = sum(rank_tensor(r, shape, dtype) for r in members)
        return total / len(members) if op == hvd.Average else total

    tensor = rank_tensor(hvd.rank(), [3])
    for op in (hvd.Sum, hvd.Average):
        assert_equal(run(mode, lambda t: hvd.allreduce(t, op=op, process_set=mine), tensor),
                     expected(op))
    grouped = run(mode, lambda a, b: hvd.grouped_allreduce([a, b], op=hvd.Sum, process_set=mine),
                  tensor, rank_tensor(hvd.rank(), [2, 2], tf.int32))
    assert_equal(grouped[0], expected(hvd.Sum))
    assert_equal(grouped[1], expected(hvd.Sum, tf.int32, (2, 2)))
    rows = 2 * len(members) + 1
    start = sum(rows // len(members) + (1 if k < rows % len(members) else 0)
                for k in range(mine.rank()))
    share = rows // len(members) + (1 if mine.rank() < rows % len(members) else 0)
    reduced = expected(hvd.Sum, shape=(rows, 2))[start:start + share]
    matrix = rank_tensor(hvd.rank(), [rows, 2])
    assert_equal(run(mode, lambda t: hvd.reducescatter(t, op=hvd.Sum, process_set=mine), matrix),
                 reduced)
    assert_equal(run(mode, lambda t: hvd.grouped_reducescatter([t], op=hvd.Sum,
                                                               process_set=mine)[0], matrix),
                 reduced)
    slices = tf.IndexedSlices(tf.ones([1, 2], tf.float64), tf.constant([hvd.rank()]),
                              dense_shape=tf.constant([hvd.size(), 2]))
    gathered = hvd.allreduce(slices, process_set=mine)
    dense = tf.math.unsorted_segment_sum(gathered.values, gathered.indices, hvd.size())
    assert_equal(dense, tf.constant([[1.0 / len(members)] * 2 if r in members else [0.0] * 2
                                     for r in range(hvd.size())], tf.float64))


def test_data_movement_on_a_process_set(mode, sets):
    mine, _ = sets
    members = mine.ranks

    def ragged(r):
        return rank_tensor(r, [r + 1, 2])
    assert_equal(run(mode, lambda t: hvd.allgather(t, process_set=mine), ragged(hvd.rank())),
                 tf.concat([ragged(r) for r in members], 0))
    assert_equal(run(mode, lambda t: hvd.grouped_allgather([t], process_set=mine)[0],
                     ragged(hvd.rank())), tf.concat([ragged(r) for r in members], 0))
    root = members[-1]  # a global rank
    assert_equal(run(mode, lambda t: hvd.broadcast(t, root, process_set=mine),
                     rank_tensor(hvd.rank(), [3])), rank_tensor(root, [3]))
    # Member k of the set sends j + 1 rows, valued k, to member j.
    splits = tf.constant([j + 1 for j in range(len(members))])
    tensor = tf.fill([int(tf.reduce_sum(splits)), 1], float(mine.rank()))
    output, received = run(mode, lambda t, s: hvd.alltoall(t, s, process_set=mine), tensor,
                           splits)
    np.testing.assert_array_equal(received.numpy(), [mine.rank() + 1] * len(members))
    np.testing.assert_array_equal(output.numpy().ravel(),
                                  np.repeat(np.arange(len(members)), mine.rank() + 1))
    run(mode, lambda: hvd.barrier(process_set=mine))


def test_gradients_on_a_process_set(mode, sets):
    mine, _ = sets
    members = mine.ranks
    check_gradient(mode, lambda r, i: rank_tensor(r, [3]),
                   lambda xs: hvd.allreduce(xs[0], op=hvd.Average, process_set=mine),
                   lambda all_xs: [tf.reduce_mean(tf.stack([xs[0] for xs in all_xs]), 0)
                                   for _ in all_xs], members=members)
    check_gradient(mode, lambda r, i: rank_tensor(r, [3], seed=1),
                   lambda xs: hvd.allreduce(xs[0], op=hvd.Max, process_set=mine),
                   lambda all_xs: [tf.reduce_max(tf.stack([xs[0] for xs in all_xs]), 0)
                                   for _ in all_xs], members=members)
    check_gradient(mode, lambda r, i: rank_tensor(r, [r + 1, 2]),
                   lambda xs: hvd.allgather(xs[0], process_set=mine),
                   lambda all_xs: [tf.concat([xs[0] for xs in all_xs], 0) for _ in all_xs],
                   members=members, horovod_factor=1.0 / len(members))
    check_gradient(mode, lambda r, i: rank_tensor(r, [3]),
                   lambda xs: hvd.broadcast(xs[0], members[0], process_set=mine),
                   lambda all_xs: [all_xs[0][0] for _ in all_xs], members=members,
                   horovod_factor=1.0 / len(members))
    rows = 2 * len(members) + 1
    shares = [rows // len(members) + (1 if k < rows % len(members) else 0)
              for k in range(len(members))]

    def scattered(all_xs):
        total = tf.add_n([xs[0] for xs in all_xs])
        return [total[sum(shares[:k]):sum(shares[:k + 1])] for k in range(len(members))]
    check_gradient(mode, lambda r, i: rank_tensor(r, [rows, 2]),
                   lambda xs: hvd.reducescatter(xs[0], op=hvd.Sum, process_set=mine),
                   scattered, members=members, horovod_factor=len(members))


def test_outsiders_and_unregistered_sets_are_refused(mode, sets):
    _, other = sets
    with pytest.raises(tf.errors.InvalidArgumentError):
        run(mode, lambda t: hvd.allreduce(t, process_set=other), tf.zeros([2]))
    with pytest.raises(ValueError, match="not registered"):
        hvd.allreduce(tf.zeros([2]), process_set=hvd.ProcessSet([0]))


def local_gradients(rank):
    """Rank `rank`'s gradients of its loss for a fixed pair of variables."""
    variables = [tf.Variable(tf.ones([2, 2], tf.float64)), tf.Variable(tf.zeros([2], tf.float64))]
    x = rank_tensor(rank, [3, 2], seed=5)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(tf.matmul(x, variables[0]) + variables[1]))
    return variables, x, tape.gradient(loss, variables)


def test_gradient_helpers_combine_over_the_set(mode, sets):
    mine, other = sets
    variables, x, own = local_gradients(hvd.rank())
    expected = [sum(local_gradients(r)[2][k] for r in mine.ranks) / mine.size() for k in (0, 1)]

    def tape_gradients(process_set):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(tf.matmul(x, variables[0]) + variables[1]))
        return hvd.DistributedGradientTape(tape, process_set=process_set).gradient(loss,
                                                                                   variables)
    for got, want in zip(run(mode, lambda: tape_gradients(mine)), expected):
        np.testing.assert_allclose(got.numpy(), want.numpy())
    # Outside the set nothing is combined (Horovod's _allreduce_cond).
    for got, want in zip(run(mode, lambda: tape_gradients(other)), own):
        np.testing.assert_allclose(got.numpy(), want.numpy())

    optimizer = hvd.DistributedOptimizer(keras.optimizers.SGD(1.0), process_set=mine)
    weights = [keras.Variable(v.numpy()) for v in variables]
    run(mode, lambda: optimizer.apply_gradients(zip(own, weights)))
    for w, v, g in zip(weights, variables, expected):
        np.testing.assert_allclose(np.array(w), (v - g).numpy())


def test_helpers_on_a_process_set(sets):
    mine, other = sets
    root = mine.ranks[-1]
    variables = [tf.Variable(rank_tensor(hvd.rank(), [2])), tf.Variable(hvd.rank())]
    hvd.broadcast_variables(variables, root_rank=root, process_set=mine)
    np.testing.assert_array_equal(variables[0].numpy(), rank_tensor(root, [2]).numpy())
    assert int(variables[1].numpy()) == root
    assert hvd.broadcast_object({"from": hvd.rank()}, root, process_set=mine) == {"from": root}
    assert hvd.allgather_object(hvd.rank(), process_set=mine) == mine.ranks

    @tf.function
    def queries():
        return (hvd.size_op(mine.process_set_id), hvd.process_set_included_op(mine.process_set_id),
                hvd.process_set_included_op(other.process_set_id))
    assert [int(v) for v in queries()] == [mine.size(), 1, 0]
