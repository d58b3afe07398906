"""op=hvd.Adasum reaches the core from horovodcpp.tensorflow: allreduce and
DistributedGradientTape against a NumPy reference of the Adasum recursion
(the core's Adasum itself is tested in test/multirank and test/python)."""
import numpy as np
import pytest
import tensorflow as tf

import horovodcpp.tensorflow as hvd
from reference import rank_tensor, run


def adasum_reference(vectors):
    if len(vectors) == 1:
        return vectors[0]
    half = len(vectors) // 2
    a, b = adasum_reference(vectors[:half]), adasum_reference(vectors[half:])
    dot = np.dot(a.ravel(), b.ravel())
    aa, bb = np.dot(a.ravel(), a.ravel()), np.dot(b.ravel(), b.ravel())
    return ((1 - dot / (2 * aa)) if aa >= 1e-8 else 1.0) * a + (
        (1 - dot / (2 * bb)) if bb >= 1e-8 else 1.0) * b


def power_of_two(n):
    return n & (n - 1) == 0


def correlated(r, shape):
    """A direction every rank shares plus the rank's own noise: Adasum is
    then far from both the sum and the average."""
    return rank_tensor(0, shape, seed=11) + 0.5 * (r + 1) * rank_tensor(r, shape, seed=12)


def test_allreduce(mode):
    x = tf.cast(correlated(hvd.rank(), [3, 4]), tf.float32)
    if not power_of_two(hvd.size()):
        with pytest.raises((hvd.InvalidArgumentError, tf.errors.OpError), match="power-of-two"):
            run(mode, lambda t: hvd.allreduce(t, op=hvd.Adasum, name="adasum"), x)
        return
    result = run(mode, lambda t: hvd.allreduce(t, op=hvd.Adasum, name="adasum"), x)
    inputs = [tf.cast(tf.cast(correlated(r, [3, 4]), tf.float32), tf.float64).numpy()
              for r in range(hvd.size())]
    np.testing.assert_allclose(result.numpy(), adasum_reference(inputs), rtol=1e-5, atol=1e-5)


def test_gradient_tape_combines_gradients():
    w = tf.Variable(tf.cast(correlated(0, [5]), tf.float64))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * correlated(hvd.rank(), [5]))
    tape = hvd.DistributedGradientTape(tape, op=hvd.Adasum)
    if not power_of_two(hvd.size()):
        with pytest.raises(hvd.InvalidArgumentError, match="power-of-two"):
            tape.gradient(loss, [w])
        return
    grad = tape.gradient(loss, [w])[0]
    expected = adasum_reference([correlated(r, [5]).numpy() for r in range(hvd.size())])
    np.testing.assert_allclose(grad.numpy(), expected, rtol=1e-12, atol=1e-12)
