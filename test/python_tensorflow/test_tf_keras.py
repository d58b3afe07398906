"""horovodcpp.tensorflow.keras: DistributedOptimizer in model.fit against
one process training on the whole batch, the callbacks (broadcast, metric
averaging, the learning-rate schedules' values) and load_model."""
import os
import tempfile

import keras
import numpy as np
import pytest

import horovodcpp.tensorflow.keras as hvd
from reference import gather_all

BATCH, STEPS = 4, 3  # per rank


def make_model(seed):
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((5,)), keras.layers.Dense(4, activation="tanh"),
                             keras.layers.Dense(1)])


def data(rank_or_none):
    """The global data, or one rank's shard laid out so that its batch k is
    its share of global batch k (fit without shuffling)."""
    n = hvd.size()
    rng = np.random.RandomState(3)
    x = rng.randn(STEPS * BATCH * n, 5).astype("float32")
    y = rng.randn(STEPS * BATCH * n, 1).astype("float32")
    if rank_or_none is None:
        return x, y
    rows = [k * BATCH * n + rank_or_none * BATCH + i for k in range(STEPS) for i in range(BATCH)]
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
    with pytest.raises(NotImplementedError, match="gradient_accumulation_steps"):
        hvd.DistributedOptimizer(keras.optimizers.SGD(), backward_passes_per_step=2)


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
