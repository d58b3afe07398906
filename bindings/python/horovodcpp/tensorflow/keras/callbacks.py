"""Keras callbacks of horovod.tensorflow.keras: BroadcastGlobalVariablesCallback,
MetricAverageCallback, LearningRateScheduleCallback,
LearningRateWarmupCallback and BestModelCheckpoint. Each rank runs them;
they only call collectives from Python between steps, in the same order on
every rank."""
import warnings

import keras
import numpy as np

from horovodcpp import _core
from horovodcpp.common.basics import Average
from horovodcpp.tensorflow.functions import broadcast_variables
from horovodcpp.tensorflow.gradients import variable_key


class BroadcastGlobalVariablesCallback(keras.callbacks.Callback):
    """Makes every rank start from root_rank's model and optimizer variables:
    broadcasts them when training starts and again after the first batch
    (Keras creates the optimizer's variables in the first step).
    local_variables: variables that each rank keeps (e.g. the weights of
    layers trained locally, see PartialDistributedOptimizer, and their
    optimizer slots). `device` is accepted for Horovod's signature."""

    def __init__(self, root_rank, device='', local_variables=None):
        super().__init__()
        self.root_rank = root_rank
        self.broadcast_done = False
        self.local_variables = {variable_key(v) for v in local_variables or []}

    def _shared(self, variables):
        return [v for v in variables if variable_key(v) not in self.local_variables]

    def _broadcast(self):
        broadcast_variables(self._shared(self.model.variables), self.root_rank)
        optimizer = self.model.optimizer
        if optimizer is not None:
            if not optimizer.built and self.model.built:
                # The same variables on every rank, also where the root
                # loaded a checkpoint with its optimizer state.
                optimizer.build(self.model.trainable_variables)
            broadcast_variables(self._shared(optimizer.variables), self.root_rank)

    def on_train_begin(self, logs=None):
        self._broadcast()

    def on_train_batch_end(self, batch, logs=None):
        if not self.broadcast_done:
            self._broadcast()
            self.broadcast_done = True


class MetricAverageCallback(keras.callbacks.Callback):
    """Replaces the epoch's logged metrics (training and validation) by their
    average over the ranks, for the callbacks after it (put it first) and
    the progress output. Every rank must log the same metrics. `device` is
    accepted for Horovod's signature."""

    def __init__(self, device=''):
        super().__init__()

    def on_epoch_end(self, epoch, logs=None):
        if not logs:
            return
        names = sorted(logs)  # the same order on every rank
        values = np.array([float(logs[n]) for n in names], dtype=np.float64)
        _core.allreduce_async(values, name="MetricAverageCallback", op=Average).wait()
        for n, v in zip(names, values):
            logs[n] = float(v)


def _get_value(variable):
    return float(keras.ops.convert_to_numpy(variable))


class LearningRateScheduleCallback(keras.callbacks.Callback):
    """Sets the learning rate to initial_lr * multiplier(epoch) from
    start_epoch until end_epoch (exclusive): at the start of each epoch
    (staircase) or of each batch, with fractional epochs (not staircase).
    A constant multiplier m means m ** (epoch - start_epoch).

    momentum_correction (Goyal et al., 2017) scales the momentum by new_lr /
    old_lr for the batch where the rate changes; it needs a momentum held in
    a variable: Keras 3 optimizers keep it as a Python float, fixed when the
    training step is compiled, so there it is skipped with a warning.
    steps_per_epoch: detected from model.fit when None."""

    def __init__(self, initial_lr, multiplier, start_epoch=0, end_epoch=None, staircase=True,
                 momentum_correction=True, steps_per_epoch=None):
        super().__init__()
        if initial_lr is None:
            raise ValueError("Parameter `initial_lr` is required")
        self.initial_lr = initial_lr
        self.start_epoch = start_epoch
        self.end_epoch = end_epoch
        self.staircase = staircase
        self.momentum_correction = momentum_correction
        self.steps_per_epoch = steps_per_epoch
        self.current_epoch = None
        self.restore_momentum = None
        if callable(multiplier):
            self.multiplier = multiplier
        else:
            self.multiplier = lambda epoch: multiplier ** (epoch - start_epoch)

    def on_train_begin(self, logs=None):
        if not self.staircase and not self.steps_per_epoch:
            self.steps_per_epoch = self.params.get("steps")
            if not self.steps_per_epoch:
                raise ValueError("Could not autodetect the number of steps per epoch. Please "
                                 "specify the steps_per_epoch parameter to the "
                                 "{}().".format(type(self).__name__))
        momentum = getattr(self.model.optimizer, "momentum", None)
        if self.momentum_correction and isinstance(momentum, float) and momentum > 0:
            warnings.warn("momentum_correction is skipped: this optimizer's momentum is a "
                          "Python float, fixed in the compiled training step")

    def on_epoch_begin(self, epoch, logs=None):
        self.current_epoch = epoch

    def learning_rate(self, epoch):
        """The rate at (fractional) epoch `epoch`."""
        return self.initial_lr * self.multiplier(epoch)

    def _adjust_learning_rate(self, epoch):
        optimizer = self.model.optimizer
        old_lr = _get_value(optimizer.learning_rate)
        new_lr = self.learning_rate(epoch)
        optimizer.learning_rate.assign(new_lr)
        momentum = getattr(optimizer, "momentum", None)
        if self.momentum_correction and hasattr(momentum, "assign") and old_lr:
            self.restore_momentum = _get_value(momentum)
            momentum.assign(self.restore_momentum * new_lr / old_lr)

    def on_train_batch_begin(self, batch, logs=None):
        if self.current_epoch < self.start_epoch or (
                self.end_epoch is not None and self.current_epoch >= self.end_epoch):
            return
        if self.staircase and batch == 0:
            self._adjust_learning_rate(self.current_epoch)
        elif not self.staircase:
            self._adjust_learning_rate(self.current_epoch + float(batch) / self.steps_per_epoch)

    def on_train_batch_end(self, batch, logs=None):
        if self.restore_momentum is not None:
            self.model.optimizer.momentum.assign(self.restore_momentum)
            self.restore_momentum = None

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = _get_value(self.model.optimizer.learning_rate)


class LearningRateWarmupCallback(LearningRateScheduleCallback):
    """Horovod's gradual warm-up for large batches (Goyal et al., 2017):
    over the first warmup_epochs the learning rate rises linearly, batch by
    batch, from initial_lr / size to initial_lr, where initial_lr is the
    rate for all ranks together (usually the single-rank rate times size).
    At fractional epoch e (counting the batch being started as done, so
    that the end of each epoch gives round numbers):

        lr(e) = initial_lr / size * (1 + e * (size - 1) / warmup_epochs)

    verbose: rank 0 prints when the warm-up is finished."""

    def __init__(self, initial_lr, warmup_epochs=5, momentum_correction=True,
                 steps_per_epoch=None, verbose=0):
        def multiplier(epoch):
            size = _core.size()
            epoch += 1.0 / self.steps_per_epoch
            return 1.0 / size * (epoch * (size - 1) / warmup_epochs + 1)
        super().__init__(initial_lr, multiplier, start_epoch=0, end_epoch=warmup_epochs,
                         staircase=False, momentum_correction=momentum_correction,
                         steps_per_epoch=steps_per_epoch)
        self.verbose = verbose

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)
        if epoch == self.end_epoch - 1 and self.verbose > 0 and _core.rank() == 0:
            print("\nEpoch %d: finished gradual learning rate warmup to %g." %
                  (epoch + 1, _get_value(self.model.optimizer.learning_rate)))


class BestModelCheckpoint(keras.callbacks.ModelCheckpoint):
    """keras.callbacks.ModelCheckpoint that keeps the model with the best
    value of `monitor` (save_best_only=True; the whole model, or its weights
    with save_weights_only). Horovod's Spark estimators set `filepath` after
    construction (a .keras file; .weights.h5 with save_weights_only); here
    it may also be given. Add it on one rank only (usually 0), as any
    checkpoint."""

    def __init__(self, monitor='val_loss', verbose=0, save_weights_only=False, mode='auto',
                 save_freq='epoch', filepath=None):
        # ModelCheckpoint checks the path's extension now; None is set later.
        placeholder = "unset.weights.h5" if save_weights_only else "unset.keras"
        super().__init__(filepath or placeholder, monitor=monitor, verbose=verbose,
                         save_best_only=True, save_weights_only=save_weights_only, mode=mode,
                         save_freq=save_freq)
        self.filepath = filepath

    def on_train_begin(self, logs=None):
        if self.filepath is None:
            raise ValueError("BestModelCheckpoint: set its filepath before training (a .keras "
                             "file; .weights.h5 with save_weights_only)")
        super().on_train_begin(logs)
