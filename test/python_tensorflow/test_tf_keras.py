"""horovodcpp.tensorflow.keras: DistributedOptimizer in model.fit against
one process training on the whole batch (also with
backward_passes_per_step), PartialDistributedOptimizer, the callbacks
(broadcast, local variables, metric averaging, the learning-rate
schedules' values, the best-model checkpoint), load_model, and a compiled
train step with many collectives."""
import os
import tempfile

import keras
import numpy as np
import pytest

import tensorflow as tf

import horovodcpp.tensorflow.keras as hvd
from reference import gather_all

BATCH, STEPS = 4, 3  # per rank


def make_model(seed):
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((5,)), keras.layers.Dense(4, activation="tanh"),
                             keras.layers.Dense(1)])


def data(rank_or_none, steps=STEPS):
    """The global data, or one rank's shard laid out so that its batch k is
    its share of global batch k (fit without shuffling)."""
    n = hvd.size()
    rng = np.random.RandomState(3)
    x = rng.randn(steps * BATCH * n, 5).astype("float32")
    y = rng.randn(steps * BATCH * n, 1).astype("float32")
    if rank_or_none is None:
        return x, y
    rows = [k * BATCH * n + rank_or_none * BATCH + i for k in range(steps) for i in range(BATCH)]
    return x[rows], y[rows]


def weights_of(model):
    return [np.array(v) for v in model.variables + model.optimizer.variables]


def assert_identical_on_every_rank(values):
    for per_rank in gather_all(values):
        for got, mine in zip(per_rank, values):
            np.testing.assert_array_equal(got, mine)


@pytest.mark.parametrize("run_eagerly", [False, True], ids=["compiled", "eager"])
def test_fit_matches_whole_batch(run_eagerly):
    model = make_model(seed=hvd.rank())  # different on each rank until broadcast
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.1, momentum=0.5)),
                  loss="mse", run_eagerly=run_eagerly)
    x, y = data(hvd.rank())
    model.fit(x, y, batch_size=BATCH, shuffle=False, verbose=0,
              callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])

    reference = make_model(seed=0)  # rank 0's initial weights
    reference.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.5), loss="mse")
    gx, gy = data(None)
    reference.fit(gx, gy, batch_size=BATCH * hvd.size(), shuffle=False, verbose=0)
    for got, want in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert_identical_on_every_rank(weights_of(model))


def test_tensorflow_distributed_optimizer_wraps_keras():
    import horovodcpp.tensorflow as hvd_tf
    optimizer = hvd_tf.DistributedOptimizer(keras.optimizers.Adam(0.01))
    assert isinstance(optimizer, keras.optimizers.Adam)
    assert type(optimizer).__name__ == "Adam"


PASSES = 2


@pytest.mark.parametrize("run_eagerly,average", [(False, True), (False, False), (True, True)],
                         ids=["compiled-average", "compiled-sum", "eager-average"])
def test_backward_passes_per_step(run_eagerly, average):
    """Gradients summed over PASSES steps, combined and applied on the last:
    one process training on PASSES global batches at once (with the rate
    times PASSES when they are summed, not averaged)."""
    steps = 2 * PASSES
    model = make_model(seed=0)
    model.compile(optimizer=hvd.DistributedOptimizer(
        keras.optimizers.SGD(0.1, momentum=0.5), backward_passes_per_step=PASSES,
        average_aggregated_gradients=average), loss="mse", run_eagerly=run_eagerly)
    x, y = data(hvd.rank(), steps)
    model.fit(x, y, batch_size=BATCH, shuffle=False, verbose=0)
    assert int(model.optimizer.iterations) == steps  # skipped steps are counted too

    reference = make_model(seed=0)
    rate = 0.1 if average else 0.1 * PASSES
    reference.compile(optimizer=keras.optimizers.SGD(rate, momentum=0.5), loss="mse")
    gx, gy = data(None, steps)
    reference.fit(gx, gy, batch_size=BATCH * hvd.size() * PASSES, shuffle=False, verbose=0)
    for got, want in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert_identical_on_every_rank(weights_of(model))


def test_partial_distributed_optimizer():
    """The local layer's gradient stays local (divided by the number of
    ranks, as in Horovod), the others are averaged."""
    model = make_model(seed=0)
    local_layer = model.layers[0]
    optimizer = hvd.PartialDistributedOptimizer(keras.optimizers.SGD(1.0),
                                                local_layers=local_layer)
    x, y = data(hvd.rank())

    def gradients(rank):
        rx, ry = data(rank)
        with tf.GradientTape() as tape:
            loss = keras.losses.MeanSquaredError()(ry, model(rx))
        return tape.gradient(loss, model.trainable_variables)
    every = [gradients(r) for r in range(hvd.size())]
    before = [np.array(v) for v in model.trainable_variables]
    local = {id(v) for v in local_layer.trainable_weights}
    optimizer.apply_gradients(zip(every[hvd.rank()], model.trainable_variables))
    for k, (v, w) in enumerate(zip(model.trainable_variables, before)):
        if id(v) in local:
            step = every[hvd.rank()][k] / hvd.size()
        else:
            step = sum(g[k] for g in every) / hvd.size()
        np.testing.assert_allclose(np.array(v), w - step.numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="Layer"):
        hvd.PartialDistributedOptimizer(keras.optimizers.SGD(), local_layers=["not a layer"])


def test_broadcast_callback_keeps_local_variables():
    model = make_model(seed=hvd.rank())  # different on each rank
    local = model.layers[0].trainable_weights
    initial = [np.array(v) for v in model.variables]
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.0)), loss="mse")
    x, y = data(hvd.rank())
    model.fit(x, y, batch_size=BATCH, shuffle=False, verbose=0, callbacks=[
        hvd.callbacks.BroadcastGlobalVariablesCallback(0, local_variables=local)])
    root = gather_all(initial)[0]
    local_ids = {id(v) for v in local}
    for v, mine, roots in zip(model.variables, initial, root):
        np.testing.assert_array_equal(np.array(v), mine if id(v) in local_ids else roots)


class RecordRate(keras.callbacks.Callback):
    """The learning rate each batch trains with (put after the schedule)."""

    def __init__(self):
        super().__init__()
        self.rates = []

    def on_train_batch_begin(self, batch, logs=None):
        self.rates.append(float(np.array(self.model.optimizer.learning_rate)))


def fit_recording(schedule, epochs):
    model = make_model(seed=0)
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.1)), loss="mse")
    record = RecordRate()
    x, y = data(hvd.rank())
    model.fit(x, y, batch_size=BATCH, epochs=epochs, shuffle=False, verbose=0,
              callbacks=[schedule, record])
    return np.array(record.rates)


def test_warmup_schedule_values():
    n, warmup, base = hvd.size(), 2, 0.1 * hvd.size()
    rates = fit_recording(hvd.callbacks.LearningRateWarmupCallback(
        initial_lr=base, warmup_epochs=warmup, momentum_correction=False), epochs=3)
    expected = []
    for epoch in range(warmup):
        for batch in range(STEPS):
            e = epoch + (batch + 1) / STEPS  # Horovod counts the batch being started as done
            expected.append(base / n * (1 + e * (n - 1) / warmup))
    expected += [expected[-1]] * STEPS  # after the warm-up the rate stays at base
    np.testing.assert_allclose(rates, expected, rtol=1e-6)
    assert abs(expected[-1] - base) < 1e-9 and abs(expected[0] - base / n * (
        1 + (n - 1) / (STEPS * warmup))) < 1e-9


def test_schedule_callback_staircase_and_momentum_warning():
    schedule = hvd.callbacks.LearningRateScheduleCallback(initial_lr=0.4, multiplier=0.5,
                                                          start_epoch=1)
    with pytest.warns(UserWarning, match="momentum_correction"):
        model = make_model(seed=0)
        model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.4, momentum=0.9)),
                      loss="mse")
        record = RecordRate()
        x, y = data(hvd.rank())
        model.fit(x, y, batch_size=BATCH, epochs=3, shuffle=False, verbose=0,
                  callbacks=[schedule, record])
    np.testing.assert_allclose(record.rates, [0.4] * STEPS + [0.4] * STEPS + [0.2] * STEPS,
                               rtol=1e-6)


class RecordLogs(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.logs = []

    def on_epoch_end(self, epoch, logs=None):
        self.logs.append(dict(logs))


def test_metric_average_callback():
    model = make_model(seed=0)
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.1)), loss="mse",
                  metrics=["mae"])
    x, y = data(hvd.rank())
    raw, averaged = RecordLogs(), RecordLogs()
    model.fit(x, y + hvd.rank(), batch_size=BATCH, epochs=2, shuffle=False, verbose=0,
              validation_data=(x, y), callbacks=[raw, hvd.callbacks.MetricAverageCallback(),
                                                 averaged])
    every_raw = gather_all(raw.logs)
    for epoch, logs in enumerate(averaged.logs):
        assert sorted(logs) == ["loss", "mae", "val_loss", "val_mae"]
        for name, value in logs.items():
            mean = np.mean([r[epoch][name] for r in every_raw])
            assert value == pytest.approx(mean, rel=1e-6)
    assert gather_all(averaged.logs)[0] == averaged.logs


def test_load_model_wraps_optimizer():
    model = make_model(seed=0)
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.Adam(0.01)), loss="mse")
    x, y = data(hvd.rank())
    model.fit(x, y, batch_size=BATCH, verbose=0)
    path = os.path.join(tempfile.mkdtemp(), "model.keras")
    model.save(path)
    loaded = hvd.load_model(path)
    assert isinstance(loaded.optimizer, keras.optimizers.Adam)
    assert type(loaded.optimizer) is not keras.optimizers.Adam  # the distributed subclass
    assert int(loaded.optimizer.iterations) == STEPS
    for got, want in zip(weights_of(loaded), weights_of(model)):
        np.testing.assert_array_equal(got, want)
    loaded.fit(x, y, batch_size=BATCH, verbose=0)  # still trains in step on every rank
    assert_identical_on_every_rank(weights_of(loaded))
    plain = keras.models.load_model(path)  # without horovodcpp: the plain optimizer
    assert type(plain.optimizer) is keras.optimizers.Adam


def test_keras_value_helpers():
    assert float(hvd.allreduce(float(hvd.rank()), op=hvd.Sum)) == sum(range(hvd.size()))
    assert hvd.allgather([hvd.rank()]).numpy().tolist() == list(range(hvd.size()))
    assert int(hvd.broadcast(hvd.rank(), root_rank=0)) == 0
    with pytest.raises(RuntimeError, match="eager"):
        hvd.broadcast_global_variables(0)


class RecordEpochs(keras.callbacks.Callback):
    """The weights and logs at the end of each epoch."""

    def __init__(self):
        super().__init__()
        self.weights, self.logs = [], []

    def on_epoch_end(self, epoch, logs=None):
        self.weights.append(self.model.get_weights())
        self.logs.append(dict(logs))


def test_best_model_checkpoint():
    model = make_model(seed=0)
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.3)), loss="mse")
    x, y = data(hvd.rank())
    path = os.path.join(tempfile.mkdtemp(), "best.keras")
    record = RecordEpochs()
    checkpoint = hvd.callbacks.BestModelCheckpoint(monitor="val_loss")
    checkpoint.filepath = path  # as Horovod's estimators set it
    model.fit(x, y, batch_size=BATCH, epochs=4, shuffle=False, verbose=0,
              validation_data=(x[:BATCH], y[:BATCH]), callbacks=[record, checkpoint])
    best = int(np.argmin([logs["val_loss"] for logs in record.logs]))
    for got, want in zip(keras.models.load_model(path).get_weights(), record.weights[best]):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="filepath"):
        model.fit(x, y, batch_size=BATCH, verbose=0,
                  callbacks=[hvd.callbacks.BestModelCheckpoint()])


PARTS = 64  # collectives per step, more than the inter-op threads


class SummedParts(keras.layers.Layer):
    """Sums each of PARTS column blocks over the ranks, one allreduce each,
    inside a tf.function called from the compiled train step."""

    @tf.function
    def _sum_parts(self, x):
        import horovodcpp.tensorflow as hvd_tf
        return tf.concat([hvd_tf.allreduce(p, op=hvd.Sum) for p in tf.split(x, PARTS, axis=1)], 1)

    def call(self, x):
        return self._sum_parts(x)

    def compute_output_shape(self, shape):
        return shape


def test_fit_with_many_collectives_per_step():
    keras.utils.set_random_seed(hvd.rank())
    model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(PARTS), SummedParts(),
                              keras.layers.Dense(1)])
    model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.01)), loss="mse")
    x, y = data(hvd.rank())
    model.fit(x, y, batch_size=BATCH, shuffle=False, verbose=0,
              callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)])
    assert_identical_on_every_rank(weights_of(model))
    # The layer's outputs are the sums over the ranks.
    inputs = model.layers[0](x[:2])
    total = sum(gather_all(inputs.numpy()))
    np.testing.assert_allclose(model.layers[1](inputs).numpy(), total, rtol=1e-6)
