"""An elastic Keras job written against Horovod's API as its elastic Keras
example uses it (run through the `horovod` shim by horovod_scripts.sh under
`hvdrun --min-np`): KerasState, the commit and state-update callbacks, the
callbacks module of horovod.keras, hvd.elastic.run around model.fit."""
import numpy as np
import tensorflow as tf

import horovod.tensorflow.keras as hvd
from horovod.keras.callbacks import MetricAverageCallback

hvd.init()
rng = np.random.default_rng(hvd.rank())
x = rng.normal(size=(256, 8)).astype("float32")
y = (x.sum(axis=1, keepdims=True) > 0).astype("float32")
model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"),
                             tf.keras.layers.Dense(1, activation="sigmoid")])
optimizer = hvd.DistributedOptimizer(tf.keras.optimizers.SGD(0.05 * hvd.size()))
model.compile(optimizer=optimizer, loss="binary_crossentropy", metrics=["accuracy"])

state = hvd.elastic.KerasState(model, batch=0, epoch=0)


def on_state_reset():
    tf.keras.backend.set_value(model.optimizer.learning_rate, 0.05 * hvd.size())


state.register_reset_callbacks([on_state_reset])
callbacks = [
    hvd.elastic.CommitStateCallback(state, batches_per_commit=4),
    hvd.elastic.UpdateBatchStateCallback(state),
    hvd.elastic.UpdateEpochStateCallback(state),
    MetricAverageCallback(),
]


@hvd.elastic.run
def train(state):
    model.fit(x, y, batch_size=32, epochs=3, initial_epoch=state.epoch, callbacks=callbacks,
              verbose=0)


train(state)
weights = np.concatenate([w.ravel() for w in model.get_weights()])
everyone = hvd.allgather(weights[None]).numpy()
assert all(np.array_equal(everyone[0], w) for w in everyone), "ranks diverged"
if hvd.rank() == 0:
    print("elastic keras: %d epochs, weights identical on all %d ranks" % (state.epoch, hvd.size()))
