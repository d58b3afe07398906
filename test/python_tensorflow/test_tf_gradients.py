"""Gradients of the differentiable collectives against plain TensorFlow on
one process that computes what every rank holds, eagerly and in
tf.function: the exact gradients of the sum of every rank's objective,
scaled as Horovod's backward passes scale them (allgather and broadcast
average over the ranks, reducescatter multiplies by their number)."""
import pytest
import tensorflow as tf

import horovodcpp.tensorflow as hvd
from reference import check_gradient, rank_tensor

REDUCE = {hvd.Sum: tf.reduce_sum, hvd.Min: tf.reduce_min, hvd.Max: tf.reduce_max,
          hvd.Product: tf.reduce_prod, hvd.Average: tf.reduce_mean}


def shares(rows):
    n = hvd.size()
    return [rows // n + (1 if r < rows % n else 0) for r in range(n)]


@pytest.mark.parametrize("op", list(REDUCE), ids=str)
def test_allreduce_gradient(mode, op):
    def make(r, i):
        # Min/Max with a tie in column 0 (split between the ranks holding it).
        t = rank_tensor(r, [3, 4])
        if op not in (hvd.Min, hvd.Max):
            return t
        return tf.concat([tf.fill([3, 1], tf.constant(1.5, tf.float64)), t[:, 1:]], 1)
    check_gradient(mode, make,
                   lambda xs: hvd.allreduce(xs[0], op=op, prescale_factor=2.0,
                                            postscale_factor=0.5),
                   lambda all_xs: [REDUCE[op](tf.stack([2.0 * xs[0] for xs in all_xs]), 0) * 0.5
                                   for _ in all_xs])


def test_grouped_allreduce_gradient(mode):
    check_gradient(mode, lambda r, i: rank_tensor(r, [2 + i], seed=i),
                   lambda xs: hvd.grouped_allreduce(xs, op=hvd.Average),
                   lambda all_xs: [[tf.reduce_mean(tf.stack([xs[i] for xs in all_xs]), 0)
                                    for i in range(2)] for _ in all_xs], count=2)


def test_allgather_gradient(mode):
    check_gradient(mode, lambda r, i: rank_tensor(r, [r + 1, 2]),
                   lambda xs: hvd.allgather(xs[0]),
                   lambda all_xs: [tf.concat([xs[0] for xs in all_xs], 0) for _ in all_xs],
                   horovod_factor=1.0 / hvd.size())


def test_grouped_allgather_gradient(mode):
    check_gradient(mode, lambda r, i: rank_tensor(r, [r + 1 + i], seed=i),
                   lambda xs: hvd.grouped_allgather(xs),
                   lambda all_xs: [[tf.concat([xs[i] for xs in all_xs], 0) for i in range(2)]
                                   for _ in all_xs], count=2, horovod_factor=1.0 / hvd.size())


def test_broadcast_gradient(mode):
    root = hvd.size() - 1
    check_gradient(mode, lambda r, i: rank_tensor(r, [3]),
                   lambda xs: hvd.broadcast(xs[0], root),
                   lambda all_xs: [all_xs[root][0] for _ in all_xs],
                   horovod_factor=1.0 / hvd.size())


def test_alltoall_gradient(mode):
    n = hvd.size()
    splits = [[(r + j) % 2 + 1 for j in range(n)] for r in range(n)]  # rows rank r sends to j

    def reference(all_xs):
        outputs = []
        for j in range(n):
            parts = []
            for r in range(n):
                start = sum(splits[r][:j])
                parts.append(all_xs[r][0][start:start + splits[r][j]])
            outputs.append(tf.concat(parts, 0))
        return outputs
    check_gradient(mode, lambda r, i: rank_tensor(r, [sum(splits[r]), 2]),
                   lambda xs: hvd.alltoall(xs[0], splits=splits[hvd.rank()])[0], reference)


@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average], ids=str)
def test_reducescatter_gradient(mode, op):
    rows = 2 * hvd.size() + 1
    starts = [sum(shares(rows)[:r]) for r in range(hvd.size())]

    def reference(all_xs):
        reduced = REDUCE[op](tf.stack([xs[0] for xs in all_xs]), 0) * 3.0
        return [reduced[s:s + k] for s, k in zip(starts, shares(rows))]
    check_gradient(mode, lambda r, i: rank_tensor(r, [rows, 2]),
                   lambda xs: hvd.reducescatter(xs[0], op=op, postscale_factor=3.0), reference,
                   horovod_factor=hvd.size())
