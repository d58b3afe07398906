"""Helpers for the tests: each rank's inputs are a function of the rank, so
every rank can also compute what all ranks hold and check its result (and
its gradients) against plain TensorFlow on one process."""
import numpy as np
import tensorflow as tf

import horovodcpp.tensorflow as hvd

DTYPES = [tf.uint8, tf.int8, tf.uint16, tf.int16, tf.int32, tf.int64, tf.float16, tf.bfloat16,
          tf.float32, tf.float64, tf.bool]


def rank_tensor(r, shape, dtype=tf.float64, seed=0):
    """Rank r's deterministic tensor: small integers for integer dtypes (so
    sums and products of a few ranks do not overflow), random bits for bool,
    and values in [-2, 2) for floats."""
    rng = np.random.RandomState(1000 * seed + r)
    if dtype == tf.bool:
        return tf.constant(rng.randint(0, 2, shape).astype(bool))
    if dtype.is_integer:
        low = 0 if dtype.is_unsigned else -3
        return tf.cast(tf.constant(rng.randint(low, 4, shape)), dtype)
    return tf.cast(tf.constant(rng.rand(*shape) * 4 - 2), dtype)


def every_rank(fn):
    return [fn(r) for r in range(hvd.size())]


def run(mode, fn, *args):
    """fn(*args) eagerly, or traced by tf.function."""
    return fn(*args) if mode == "eager" else tf.function(fn)(*args)


def assert_equal(actual, expected):
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    if expected.dtype.is_floating:
        tol = {tf.float16: 1e-2, tf.bfloat16: 2e-2}.get(expected.dtype, 1e-6)
        np.testing.assert_allclose(tf.cast(actual, tf.float64).numpy(),
                                   tf.cast(expected, tf.float64).numpy(), rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(actual.numpy(), expected.numpy())


def gather_all(value):
    """Every rank's Python/NumPy value, in rank order."""
    return hvd.allgather_object(value)


def check_gradient(mode, make_input, distributed, reference, count=1, members=None,
                   horovod_factor=1.0):
    """Checks the outputs and input gradients of a differentiable collective.

    make_input(r, i): input i of rank r (float64); distributed(inputs) runs
    the collective here; reference(inputs of every member) returns every
    member's outputs computed locally. members: the global ranks taking
    part (default: every rank). The objective is the sum over members of
    <weights_r, outputs_r>; this rank's input gradients must be its exact
    gradient times horovod_factor (Horovod's backward of allgather and
    broadcast averages over the members: 1/members; reducescatter's scales
    by the number of members).
    """
    members = list(range(hvd.size())) if members is None else list(members)
    me = members.index(hvd.rank())

    def as_list(x):
        return list(x) if isinstance(x, (list, tuple)) else [x]

    all_inputs = [[make_input(r, i) for i in range(count)] for r in members]
    with tf.GradientTape() as tape:
        tape.watch(all_inputs)
        all_outputs = [as_list(o) for o in reference(all_inputs)]
        # Weights by output shape, known here (not always when tracing).
        all_weights = [[rank_tensor(r, o.shape, seed=7 + i) for i, o in enumerate(outs)]
                       for r, outs in zip(members, all_outputs)]
        objective = sum(tf.reduce_sum(o * w) for outs, ws in zip(all_outputs, all_weights)
                        for o, w in zip(outs, ws))
    expected = [None if g is None else g * horovod_factor
                for g in tape.gradient(objective, all_inputs[me])]

    def local(inputs):
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            outputs = as_list(distributed(inputs))
            objective = sum(tf.reduce_sum(o * w) for o, w in zip(outputs, all_weights[me]))
        return outputs, tape.gradient(objective, inputs)

    inputs = [make_input(hvd.rank(), i) for i in range(count)]
    outputs, grads = run(mode, local, inputs)
    for got, want in zip(outputs, all_outputs[me]):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-9)
    for got, want, x in zip(grads, expected, inputs):
        want = tf.zeros_like(x) if want is None else want  # unused input: zero
        got = tf.zeros_like(x) if got is None else got
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-9)
