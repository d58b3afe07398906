"""Elastic training with Keras, as horovod.tensorflow.keras.elastic:

    state = hvd.elastic.KerasState(model, batch=0, epoch=0)
    callbacks = [hvd.elastic.CommitStateCallback(state),
                 hvd.elastic.UpdateBatchStateCallback(state),
                 hvd.elastic.UpdateEpochStateCallback(state)]

    @hvd.elastic.run
    def train(state):
        model.fit(x, y, callbacks=callbacks, epochs=epochs - state.epoch)

    train(state)
"""
import keras

from horovodcpp.tensorflow.elastic import (  # noqa: F401
    HostsUpdatedInterrupt, ObjectState, State, TensorFlowKerasState, run)


class KerasState(TensorFlowKerasState):
    """State of a Keras model and its optimizer (the model's own when
    `optimizer` is None), plus keyword arguments as attributes."""

    def __init__(self, model, optimizer=None, **kwargs):
        super(KerasState, self).__init__(model, optimizer=optimizer, backend=keras.backend,
                                         **kwargs)


class CommitStateCallback(keras.callbacks.Callback):
    """Commits `state` every `batches_per_commit` batches and at the end of
    each epoch (which may raise HostsUpdatedInterrupt out of fit())."""

    def __init__(self, state, batches_per_commit=1):
        super(CommitStateCallback, self).__init__()
        self.state = state
        self.batches_per_commit = batches_per_commit
        self.batches_remaining = batches_per_commit

    def on_train_begin(self, logs=None):
        # From the same count on every rank after each reset.
        self.batches_remaining = self.batches_per_commit

    def on_batch_end(self, batch, logs=None):
        self.batches_remaining -= 1
        if self.batches_remaining == 0:
            self.state.commit()
            self.batches_remaining = self.batches_per_commit

    def on_epoch_end(self, epoch, logs=None):
        self.state.commit()


class UpdateBatchStateCallback(keras.callbacks.Callback):
    """Keeps state.batch at the number of the last batch done (0 at the end
    of an epoch), and, as Horovod's, lowers the epoch's steps in
    self.params by the batches done before a reset (Keras 3 shows it in the
    progress bar but runs steps_per_epoch batches regardless)."""

    def __init__(self, state):
        super(UpdateBatchStateCallback, self).__init__()
        self.state = state
        self.steps_per_epoch = None

    def on_train_begin(self, logs=None):
        self.steps_per_epoch = None

    def on_epoch_begin(self, epoch, logs=None):
        if self.params.get("steps"):
            if self.steps_per_epoch is None:
                self.steps_per_epoch = self.params.get("steps")
            self.params["steps"] = self.steps_per_epoch - self.state.batch

    def on_batch_end(self, batch, logs=None):
        self.state.batch = batch

    def on_epoch_end(self, epoch, logs=None):
        self.state.batch = 0


class UpdateEpochStateCallback(keras.callbacks.Callback):
    """Keeps state.epoch at the number of epochs done, counted across
    resets (Keras numbers each fit()'s epochs from 0)."""

    def __init__(self, state):
        super(UpdateEpochStateCallback, self).__init__()
        self.state = state
        self.initial_epoch = self.state.epoch

    def on_train_begin(self, logs=None):
        self.initial_epoch = self.state.epoch

    def on_epoch_end(self, epoch, logs=None):
        # +1: a reset after state.batch went back to 0 must not repeat this epoch.
        self.state.epoch = self.initial_epoch + epoch + 1
