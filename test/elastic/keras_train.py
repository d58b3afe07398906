"""An elastic Keras training job for elastic_tests.sh: model.fit inside
hvd.elastic.run with Horovod's elastic callbacks, a commit after every
batch. Every rank prints one line per batch ("step E.B size N rank R worker
W time T"); --kill-worker W --kill-batch B makes worker W SIGKILL itself at
the start of batch B of epoch 1 (its peers then wait for it in that batch's
allreduce). At the end every rank checks its weights against rank 0's and
prints "parameters identical on all N ranks (sum X)"."""
import argparse
import os
import signal
import time

import keras
import numpy as np
import tensorflow as tf

import horovodcpp.tensorflow.keras as hvd

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--steps", type=int, default=8, help="batches per epoch")
parser.add_argument("--kill-worker", type=int, default=-1)
parser.add_argument("--kill-batch", type=int, default=-1)
parser.add_argument("--tag", default="", help="ignored: lets the test find its processes")
args = parser.parse_args()
WORKER = int(os.environ["HOROVODCPP_ELASTIC_WORKER"])

hvd.init()
keras.utils.set_random_seed(100 + WORKER)  # different on purpose: sync() must make them equal
model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(32, activation="relu"),
                          keras.layers.Dense(4)])
model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.05, momentum=0.9)),
              loss="mse")


def shard(rank):
    """The batches of one epoch on `rank`."""
    x = np.random.default_rng(rank).standard_normal((8 * args.steps, 16)).astype(np.float32)
    return x, np.repeat((x[:, :4] * 2).sum(1, keepdims=True), 4, axis=1)


state = hvd.elastic.KerasState(model, batch=0, epoch=0)
state.register_reset_callbacks(
    [lambda: print("reset: size {} rank {} worker {}".format(hvd.size(), hvd.rank(), WORKER),
                   flush=True)])


class Progress(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = state.epoch

    def on_train_batch_begin(self, batch, logs=None):
        if WORKER == args.kill_worker and self.epoch == 1 and batch == args.kill_batch:
            print("killing worker {} at step {}.{} time {:.3f}".format(
                WORKER, self.epoch, batch, time.time()), flush=True)
            os.kill(os.getpid(), signal.SIGKILL)

    def on_train_batch_end(self, batch, logs=None):
        print("step {}.{} size {} rank {} worker {} time {:.3f}".format(
            self.epoch, batch, hvd.size(), hvd.rank(), WORKER, time.time()), flush=True)


callbacks = [hvd.elastic.CommitStateCallback(state), hvd.elastic.UpdateBatchStateCallback(state),
             hvd.elastic.UpdateEpochStateCallback(state), Progress()]


@hvd.elastic.run
def train(state):
    print("train from epoch {} size {} rank {} worker {} host {}".format(
        state.epoch, hvd.size(), hvd.rank(), WORKER, os.environ.get("HOROVOD_HOSTNAME")),
        flush=True)
    x, y = shard(hvd.rank())
    model.fit(x, y, batch_size=8, steps_per_epoch=args.steps,
              epochs=args.epochs - state.epoch, callbacks=callbacks, verbose=0)


train(state)
total = 0.0
for i, w in enumerate(model.get_weights()):
    root = hvd.broadcast(w, root_rank=0, name="check.{}".format(i))
    same = hvd.allreduce(np.array(int(np.array_equal(np.array(root), w))), op=hvd.Min,
                         name="same.{}".format(i))
    if not int(same):
        raise SystemExit("weight {} differs across ranks".format(i))
    total += float(w.astype(np.float64).sum())
print("parameters identical on all {} ranks (sum {:.6f}) after epoch {}".format(
    hvd.size(), total, state.epoch), flush=True)
