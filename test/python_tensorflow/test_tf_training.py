"""DistributedGradientTape, PartialDistributedGradientTape and the legacy
DistributedOptimizer (also with backward_passes_per_step): each rank
trains on its shard of a global batch; the variables must equal one process
training on the whole batch, and be identical on every rank."""
import numpy as np
import pytest
import tensorflow as tf

import horovodcpp.tensorflow as hvd
from reference import gather_all, run

STEPS, ROWS_PER_RANK, LR = 3, 4, 0.1


def global_batch(step, scale=1):
    """Global batch `step`; with scale k, global batches step*k .. step*k+k-1
    together."""
    if scale > 1:
        parts = [global_batch(step * scale + i) for i in range(scale)]
        return tuple(np.concatenate(p) for p in zip(*parts))
    rng = np.random.RandomState(100 + step)
    n = ROWS_PER_RANK * hvd.size()
    return rng.randn(n, 5), rng.randint(0, 6, n), rng.randn(n, 2)


def shard(array):
    return array[hvd.rank()::hvd.size()]


def make_variables():
    rng = np.random.RandomState(7)
    return [tf.Variable(rng.randn(5, 2), name="w"), tf.Variable(rng.randn(2), name="b"),
            tf.Variable(rng.randn(6, 2), name="embedding")]


def loss_fn(variables, x, ids, y):
    w, b, embedding = variables
    # tf.gather makes the embedding's gradient a tf.IndexedSlices.
    prediction = tf.matmul(x, w) + b + tf.gather(embedding, ids)
    return tf.reduce_mean(tf.square(prediction - y))


def train_whole_batch(scale=1.0, steps=STEPS, batches_per_step=1):
    """The reference: one process, the whole global batch each step."""
    variables = make_variables()
    for step in range(steps):
        x, ids, y = global_batch(step, batches_per_step)
        with tf.GradientTape() as tape:
            loss = loss_fn(variables, x, ids, y)
        for v, g in zip(variables, tape.gradient(loss, variables)):
            v.assign_sub(LR * scale * tf.convert_to_tensor(g))
    return [v.numpy() for v in variables]


def assert_trained(variables, expected, rtol=1e-7):
    values = [v.numpy() for v in variables]
    for got, want in zip(values, expected):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
    for per_rank in gather_all(values):  # bit-identical on every rank
        for got, mine in zip(per_rank, values):
            np.testing.assert_array_equal(got, mine)


TAPE_OPTIONS = {
    "default": dict(),
    "groups": dict(groups=2),
    "group_lists": dict(groups="first_two"),
    "predivide": dict(gradient_predivide_factor=2.0),
    "sparse_as_dense": dict(sparse_as_dense=True),
    "fp16": dict(compression=hvd.Compression.fp16),
}


@pytest.mark.parametrize("options", list(TAPE_OPTIONS), ids=str)
def test_distributed_gradient_tape(mode, options):
    kwargs = dict(TAPE_OPTIONS[options])
    variables = make_variables()
    if kwargs.get("groups") == "first_two":
        kwargs["groups"] = [variables[:2]]

    def step(x, ids, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(variables, x, ids, y)
        tape = hvd.DistributedGradientTape(tape, **kwargs)
        for v, g in zip(variables, tape.gradient(loss, variables)):
            v.assign_sub(LR * tf.convert_to_tensor(g))
    if mode == "function":
        step = tf.function(step)
    for s in range(STEPS):
        x, ids, y = map(shard, global_batch(s))
        step(x, ids, y)
    assert_trained(variables, train_whole_batch(), rtol=1e-2 if options == "fp16" else 1e-7)


def test_tape_sum_op_and_local_source(mode):
    variables = make_variables()

    def step(x, ids, y):
        with tf.GradientTape(persistent=True) as tape:
            loss = loss_fn(variables, x, ids, y)
        summed = hvd.DistributedGradientTape(tape, op=hvd.Sum)
        grads = summed.gradient(loss, variables)
        partial = hvd.DistributedGradientTape(tape)
        partial.register_local_source(variables[1])
        local = partial.gradient(loss, {"b": variables[1]})["b"]
        return grads, local, tape.gradient(loss, variables[1])
    if mode == "function":
        step = tf.function(step)
    x, ids, y = map(shard, global_batch(0))
    grads, local, own = step(x, ids, y)
    # Sum over ranks of per-shard mean gradients: size x the whole-batch one.
    reference = make_variables()
    with tf.GradientTape() as tape:
        loss = loss_fn(reference, *global_batch(0))
    for got, want in zip(grads, tape.gradient(loss, reference)):
        np.testing.assert_allclose(tf.convert_to_tensor(got).numpy(),
                                   hvd.size() * tf.convert_to_tensor(want).numpy(), rtol=1e-7)
    np.testing.assert_allclose(local.numpy(), own.numpy() / hvd.size())


def test_legacy_distributed_optimizer():
    variables = make_variables()
    optimizer = hvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(LR))
    for s in range(STEPS):
        x, ids, y = map(shard, global_batch(s))
        optimizer.minimize(lambda: loss_fn(variables, x, ids, y), var_list=variables)
    assert_trained(variables, train_whole_batch())


@pytest.mark.parametrize("average", [True, False], ids=["average", "sum"])
def test_legacy_optimizer_backward_passes_per_step(mode, average):
    """Gradients summed over 2 steps, combined and applied on the second: one
    process training on 2 global batches at once (at twice the rate when
    they are summed)."""
    variables = make_variables()
    optimizer = hvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(LR),
                                         backward_passes_per_step=2, sparse_as_dense=True,
                                         average_aggregated_gradients=average)

    def step(x, ids, y):
        optimizer.minimize(lambda: loss_fn(variables, x, ids, y), var_list=variables)
    if mode == "function":
        step = tf.function(step)
    for s in range(4):
        step(*map(shard, global_batch(s)))
    assert_trained(variables, train_whole_batch(1.0 if average else 2.0, steps=2,
                                                batches_per_step=2))
    # As in Horovod, sparse gradients cannot be summed into a variable.
    sparse = hvd.DistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(LR),
                                      backward_passes_per_step=2)
    with pytest.raises(ValueError, match="sparse_as_dense"):
        sparse.minimize(lambda: loss_fn(variables, *map(shard, global_batch(0))),
                        var_list=variables)


def test_partial_distributed_gradient_tape(mode):
    """The local layer's gradient stays local (divided by the number of
    ranks, as in Horovod), the others are averaged; get_local_and_global_gradients
    splits them into the local and the others' (variable, gradient) pairs."""
    import keras
    keras.utils.set_random_seed(0)
    local_layer, shared_layer = keras.layers.Dense(3), keras.layers.Dense(1)
    model = keras.Sequential([keras.Input((5,)), local_layer, shared_layer])

    def gradients(x, y, distributed):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        if distributed:
            tape = hvd.PartialDistributedGradientTape(tape, local_layers=[local_layer])
        return tape.gradient(loss, model.trainable_variables)
    own = [gradients(*shard_xy(r), False) for r in range(hvd.size())]
    got = run(mode, lambda x, y: gradients(x, y, True), *shard_xy(hvd.rank()))
    local = {id(v) for v in local_layer.trainable_weights}
    for k, (v, g) in enumerate(zip(model.trainable_variables, got)):
        if id(v) in local:
            want = own[hvd.rank()][k] / hvd.size()
        else:
            want = sum(o[k] for o in own) / hvd.size()
        np.testing.assert_allclose(g.numpy(), want.numpy(), rtol=1e-5, atol=1e-7)
    # Horovod's split of the same gradients: (variable, gradient) pairs.
    with tf.GradientTape() as tape:
        x, y = shard_xy(hvd.rank())
        loss = tf.reduce_mean(tf.square(model(x) - y))
    tape = hvd.PartialDistributedGradientTape(tape, local_layers=[local_layer])
    local_pairs, global_pairs = tape.get_local_and_global_gradients(loss,
                                                                    model.trainable_variables)
    assert [id(v) for v, _ in local_pairs] == [id(v) for v in local_layer.trainable_weights]
    assert [id(v) for v, _ in global_pairs] == [id(v) for v in shared_layer.trainable_weights]
    for v, g in local_pairs + global_pairs:
        k = [id(w) for w in model.trainable_variables].index(id(v))
        np.testing.assert_allclose(g.numpy(), got[k].numpy(), rtol=1e-6)


def shard_xy(rank):
    x, _, y = global_batch(0)
    return (tf.constant(x[rank::hvd.size()], tf.float32),
            tf.constant(y[rank::hvd.size()][:, :1], tf.float32))


def test_option_errors():
    with pytest.raises(ValueError, match="predivide"):
        hvd.DistributedGradientTape(tf.GradientTape(), op=hvd.Sum, gradient_predivide_factor=2.0)
    with pytest.raises(ValueError, match="either legacy"):
        hvd.DistributedOptimizer(object())
