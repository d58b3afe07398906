"""The gradient tapes and SyncBatchNormalization with tf.keras, whichever
Keras tf.keras is: Keras 3, or tf_keras (Keras 2) under
TF_USE_LEGACY_KERAS=1, as Horovod users' Keras 2 code has it on
TensorFlow 2.16 and later. This file runs in the suite and once more with
TF_USE_LEGACY_KERAS=1 (test/CMakeLists.txt: python_tensorflow_legacy_keras)."""
import os

import numpy as np
import tensorflow as tf

import horovodcpp.tensorflow as hvd


def test_tf_keras_is_the_keras_asked_for():
    legacy = os.environ.get("TF_USE_LEGACY_KERAS") == "1"
    assert tf.keras.__name__.startswith("tf_keras." if legacy else "keras."), tf.keras.__name__


def test_partial_tape_of_tf_keras_layers():
    """Horovod's PartialDistributedGradientTape test in small: local_layers
    are tf.keras layers; get_local_and_global_gradients gives the local
    layer's gradients divided by the number of ranks and the others'
    averaged over the ranks, as (variable, gradient) pairs."""
    init = tf.keras.initializers.Constant(hvd.rank() + 1)
    local = tf.keras.layers.Dense(2, kernel_initializer=init, bias_initializer=init)
    shared = tf.keras.layers.Dense(1, kernel_initializer=init, bias_initializer=init)
    model = tf.keras.Sequential([tf.keras.Input((3,)), local, shared])
    with tf.GradientTape(persistent=True) as tape:
        loss = tf.reduce_sum(model(tf.ones((1, 3))))
    own = [g.numpy() for g in tape.gradient(loss, model.trainable_weights)]
    every_rank = [hvd.allgather(tf.constant(g[None])).numpy() for g in own]
    tape = hvd.PartialDistributedGradientTape(tape, local_layers=[local])
    local_pairs, global_pairs = tape.get_local_and_global_gradients(loss,
                                                                    model.trainable_weights)
    assert [id(v) for v, _ in local_pairs] == [id(v) for v in local.trainable_weights]
    assert [id(v) for v, _ in global_pairs] == [id(v) for v in shared.trainable_weights]
    for k, (_, grad) in enumerate(local_pairs + global_pairs):
        want = own[k] / hvd.size() if k < len(local_pairs) else every_rank[k].mean(0)
        np.testing.assert_allclose(grad.numpy(), want, rtol=1e-6)


def test_sync_batch_normalization_is_a_tf_keras_layer():
    """A layer of tf.keras (as Horovod's), normalizing with the statistics
    of the global batch: against tf.keras's BatchNormalization on one
    process holding it (ranks hold different batch sizes)."""
    sync = hvd.SyncBatchNormalization(axis=1, momentum=0.5, fused=False)
    assert isinstance(sync, tf.keras.layers.Layer)
    plain = tf.keras.layers.BatchNormalization(axis=1, momentum=0.5)
    batches = [tf.constant(np.arange((r + 2) * 3, dtype=np.float32).reshape(r + 2, 3) * (r + 1))
               for r in range(hvd.size())]
    expected = np.split(plain(tf.concat(batches, 0), training=True).numpy(),
                        np.cumsum([len(b) for b in batches])[:-1])[hvd.rank()]
    np.testing.assert_allclose(sync(batches[hvd.rank()], training=True).numpy(), expected,
                               rtol=1e-5, atol=1e-5)
    for got, want in zip(sync.non_trainable_weights, plain.non_trainable_weights):
        np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-6)
