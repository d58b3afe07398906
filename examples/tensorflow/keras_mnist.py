"""Data-parallel training of a small CNN on Fashion-MNIST with Keras and
horovodcpp.tensorflow.keras (the API of horovod.tensorflow.keras):

    hvdrun -np 2 .venv/bin/python examples/tensorflow/keras_mnist.py

Each rank trains on its shard of the training images (every size-th one);
DistributedOptimizer averages the gradients in model.fit's compiled step, so
every rank applies the same update. The learning rate is the per-rank rate
times the number of ranks, reached by Horovod's linear warm-up over the
first epoch. Each rank scores its slice of the test images and
MetricAverageCallback averages the metrics over the ranks. Rank 0 prints
the progress, writes a checkpoint per epoch (--checkpoint-dir; a rerun
resumes from the last one) and TensorBoard logs (--log-dir).
"""
import argparse
import gzip
import os

import numpy as np
import tensorflow as tf

import horovodcpp.tensorflow.keras as hvd

# Fashion-MNIST's pixel mean and standard deviation (on [0, 1]).
MEAN, STD = 0.2860, 0.3530


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist",
                        help="directory with the IDX .gz files (Debian: dataset-fashion-mnist)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64, help="per rank")
    parser.add_argument("--lr", type=float, default=0.01,
                        help="per-rank learning rate (multiplied by the number of ranks)")
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--warmup-epochs", type=int, default=1)
    parser.add_argument("--fp16-allreduce", action="store_true",
                        help="send gradients as float16")
    parser.add_argument("--train-images", type=int, default=60000,
                        help="train on the first N training images (all: 60000)")
    parser.add_argument("--checkpoint-dir", default=None,
                        help="rank 0 writes checkpoint-<epoch>.keras here; training resumes "
                             "from the last one")
    parser.add_argument("--log-dir", default=None, help="rank 0 writes TensorBoard logs here")
    parser.add_argument("--seed", type=int, default=42)
    return parser.parse_args()


def read_idx(path):
    """An IDX file (gzip'ed): uint8 images [n, rows, cols] or labels [n]."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, count = np.frombuffer(data, ">u4", 2)
    if magic == 2051:
        rows, cols = np.frombuffer(data, ">u4", 2, offset=8)
        return np.frombuffer(data, np.uint8, offset=16).reshape(count, rows, cols)
    if magic == 2049:
        return np.frombuffer(data, np.uint8, offset=8)
    raise ValueError("{}: not an IDX image or label file".format(path))


def load_shard(data_dir, split, limit=None):
    """This rank's images (every size-th one, the same count on every rank,
    so that every rank runs the same number of steps) and labels."""
    prefix = os.path.join(data_dir, split)
    try:
        images = read_idx(prefix + "-images-idx3-ubyte.gz")[:limit]
        labels = read_idx(prefix + "-labels-idx1-ubyte.gz")[:limit]
    except FileNotFoundError as e:
        raise SystemExit("{}\ninstall Debian's dataset-fashion-mnist or pass --data-dir".format(e))
    count = len(labels) // hvd.size() * hvd.size()
    x = (images[hvd.rank():count:hvd.size()].astype(np.float32) / 255 - MEAN) / STD
    return x[..., None], labels[hvd.rank():count:hvd.size()].astype(np.int64)


def build_model():
    return tf.keras.Sequential([
        tf.keras.Input((28, 28, 1)),
        tf.keras.layers.Conv2D(16, 5, activation="relu"),  # 28 -> 24, pooled to 12
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Conv2D(32, 5, activation="relu"),  # 12 -> 8, pooled to 4
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10),
    ])


def last_checkpoint(directory):
    """(epoch, path) of the newest checkpoint-<epoch>.keras, or (0, None)."""
    epochs = [int(name[len("checkpoint-"):-len(".keras")]) for name in os.listdir(directory)
              if name.startswith("checkpoint-") and name.endswith(".keras")]
    if not epochs:
        return 0, None
    return max(epochs), os.path.join(directory, "checkpoint-{}.keras".format(max(epochs)))


def main():
    args = parse_args()
    hvd.init()
    # Ranks share the host's cores: one slice each instead of all of them.
    tf.config.threading.set_intra_op_parallelism_threads(
        max(1, (os.cpu_count() or 1) // hvd.local_size()))
    tf.keras.utils.set_random_seed(args.seed + hvd.rank())  # BroadcastGlobalVariables unifies

    x_train, y_train = load_shard(args.data_dir, "train", args.train_images)
    x_test, y_test = load_shard(args.data_dir, "t10k")
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none

    # Resume: rank 0 loads the checkpoint (model and optimizer state), the
    # broadcast callback shares it.
    resume_epoch, path = 0, None
    if args.checkpoint_dir and hvd.rank() == 0:
        os.makedirs(args.checkpoint_dir, exist_ok=True)
        resume_epoch, path = last_checkpoint(args.checkpoint_dir)
    resume_epoch = hvd.broadcast_object(resume_epoch, root_rank=0, name="resume_epoch")
    if path:
        print("resuming from {} (epoch {})".format(path, resume_epoch), flush=True)
        model = hvd.load_model(path, compression=compression)
    else:
        model = build_model()
        optimizer = tf.keras.optimizers.SGD(args.lr * hvd.size(), momentum=args.momentum)
        model.compile(optimizer=hvd.DistributedOptimizer(optimizer, compression=compression),
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])

    callbacks = [
        hvd.callbacks.BroadcastGlobalVariablesCallback(0),
        # Before the callbacks that read the metrics (checkpoints, TensorBoard).
        hvd.callbacks.MetricAverageCallback(),
        # No momentum correction: Keras 3 compiles SGD's momentum in as a constant.
        hvd.callbacks.LearningRateWarmupCallback(initial_lr=args.lr * hvd.size(),
                                                 warmup_epochs=args.warmup_epochs,
                                                 momentum_correction=False, verbose=1),
    ]
    if hvd.rank() == 0:
        if args.checkpoint_dir:
            callbacks.append(tf.keras.callbacks.ModelCheckpoint(
                os.path.join(args.checkpoint_dir, "checkpoint-{epoch}.keras")))
        if args.log_dir:
            callbacks.append(tf.keras.callbacks.TensorBoard(args.log_dir))
    model.fit(x_train, y_train, batch_size=args.batch_size, epochs=args.epochs,
              initial_epoch=resume_epoch, validation_data=(x_test, y_test), callbacks=callbacks,
              verbose=2 if hvd.rank() == 0 else 0)

    # Every rank applied the same updates: the weights must be identical.
    weights = model.get_weights()
    root = hvd.broadcast_object(weights, root_rank=0, name="final_weights")
    same = all(np.array_equal(a, b) for a, b in zip(root, weights))
    if not int(hvd.allreduce(int(same), op=hvd.Min, name="same_weights")):
        raise SystemExit("weights differ across ranks")
    _, accuracy = model.evaluate(x_test, y_test, batch_size=1000, verbose=0)
    accuracy = float(hvd.allreduce(accuracy, name="test_accuracy"))  # equal slices: the mean
    if hvd.rank() == 0:
        print("test accuracy={:.4f}".format(accuracy))
        print("parameters identical on all {} ranks".format(hvd.size()))
    hvd.shutdown()


if __name__ == "__main__":
    main()
