"""A TensorFlow 2 synthetic benchmark written against Horovod's API, as its
example scripts use it (run through the `horovod` shim by
horovod_scripts.sh): DistributedGradientTape in a tf.function, the first
step broadcasting the model's and optimizer's variables, throughput
averaged with hvd.allreduce. Ends with a check that every rank holds the
same weights."""
import argparse
import time

import numpy as np
import tensorflow as tf

import horovod.tensorflow as hvd
from horovod.tensorflow.mpi_ops import allgather, rank, size

parser = argparse.ArgumentParser()
parser.add_argument("--batch-size", type=int, default=16)
parser.add_argument("--num-iters", type=int, default=3)
parser.add_argument("--num-batches-per-iter", type=int, default=3)
parser.add_argument("--fp16-allreduce", action="store_true")
args = parser.parse_args()

hvd.init()
tf.random.set_seed(hvd.rank())  # different initial weights: the broadcast must fix them
model = tf.keras.Sequential([
    tf.keras.Input((32, 32, 3)),
    tf.keras.layers.Conv2D(8, 3, activation="relu"),
    tf.keras.layers.GlobalAveragePooling2D(),
    tf.keras.layers.Dense(10),
])
optimizer = tf.keras.optimizers.SGD(0.01 * hvd.size())
compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
data = tf.random.uniform([args.batch_size, 32, 32, 3])
target = tf.random.uniform([args.batch_size], maxval=10, dtype=tf.int64)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@tf.function
def benchmark_step(first_batch):
    with tf.GradientTape() as tape:
        loss = loss_fn(target, model(data, training=True))
    tape = hvd.DistributedGradientTape(tape, compression=compression)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    if first_batch:
        hvd.broadcast_variables(model.variables, root_rank=0)
        hvd.broadcast_variables(optimizer.variables, root_rank=0)


benchmark_step(first_batch=True)
rates = []
for _ in range(args.num_iters):
    start = time.time()
    for _ in range(args.num_batches_per_iter):
        benchmark_step(first_batch=False)
    rates.append(args.batch_size * args.num_batches_per_iter / (time.time() - start))
mean = hvd.allreduce(tf.constant(np.mean(rates)), op=hvd.Sum).numpy()
if rank() == 0:
    print("Total img/sec on %d rank(s): %.1f" % (size(), mean))
weights = tf.concat([tf.reshape(w, [-1]) for w in model.get_weights()], 0)
everyone = allgather(weights[None]).numpy()
assert all(np.array_equal(everyone[0], w) for w in everyone), "ranks diverged"
if rank() == 0:
    print("weights identical on all %d ranks" % size())
