"""SyncBatchNormalization against keras.layers.BatchNormalization on one
process holding the global batch (ranks hold different batch sizes):
outputs, input gradients and moving statistics, eagerly and in
tf.function."""
import numpy as np
import pytest
import tensorflow as tf

import horovodcpp.tensorflow as hvd
import keras
from reference import check_gradient, rank_tensor


def rows(r):
    return r + 2  # a different batch size on each rank


def test_outputs_and_gradients_are_those_of_the_global_batch(mode):
    sync = hvd.SyncBatchNormalization(momentum=0.5, dtype="float64")
    sync.build((None, 3))
    plain = keras.layers.BatchNormalization(momentum=0.5, dtype="float64")
    plain.build((None, 3))

    def reference(all_xs):
        outputs = plain(tf.concat([xs[0] for xs in all_xs], 0), training=True)
        return tf.split(outputs, [rows(r) for r in range(hvd.size())])
    check_gradient(mode, lambda r, i: rank_tensor(r, [rows(r), 3]) * (r + 1),
                   lambda xs: sync(xs[0], training=True), reference)
    for got, want in zip(sync.non_trainable_weights, plain.non_trainable_weights):
        np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-6)


def test_masked_and_refused_forms():
    sync = hvd.SyncBatchNormalization()
    plain = keras.layers.BatchNormalization()
    inputs = [rank_tensor(r, [4, 2, 3]) for r in range(hvd.size())]
    masks = [tf.constant([[True, r % 2 == 0]] * 4) for r in range(hvd.size())]
    expected = plain(tf.concat(inputs, 0), training=True, mask=tf.concat(masks, 0))
    got = sync(inputs[hvd.rank()], training=True, mask=masks[hvd.rank()])
    np.testing.assert_allclose(got.numpy(), expected[4 * hvd.rank():4 * hvd.rank() + 4].numpy(),
                               rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="fused"):
        hvd.SyncBatchNormalization(fused=True)
    assert "fused" not in hvd.SyncBatchNormalization(fused=False).get_config()  # as Horovod
