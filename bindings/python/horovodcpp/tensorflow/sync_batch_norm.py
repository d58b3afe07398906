"""SyncBatchNormalization of horovod.tensorflow: Keras batch normalization
whose training statistics are those of the global batch. Like Horovod's, it
is a layer of whichever Keras tf.keras is: Keras 3, or tf_keras (Keras 2)
under TF_USE_LEGACY_KERAS=1."""
import keras
import tensorflow as tf

from horovodcpp import _core
from horovodcpp.common.basics import Sum
from horovodcpp.tensorflow import collectives
from horovodcpp.tensorflow.util import legacy_keras

_DOC = """Batch normalization whose mean and variance in training are those of
    every rank's inputs together: each rank's count, sum and sum of squares
    per channel are summed over the ranks (one allreduce, differentiable, so
    the gradient is that of the global batch too). Exact also when ranks
    hold different batch sizes (Horovod averages the ranks' moments, the
    same for equal sizes). fused=True is refused and fused=False dropped,
    as in Horovod; masks are honoured as in Keras."""


def _refuse_fused(fused):
    if fused in (True, None):
        raise ValueError("SyncBatchNormalization does not support fused=True.")


def _global_moments(inputs, axes, mask, keepdims=False):
    """Mean and variance over `axes` of every rank's `inputs` (the entries
    where `mask`, a mask of the inputs without their channel axis, is True)."""
    if mask is None:
        weights = tf.ones_like(inputs)
    else:
        weights = tf.broadcast_to(tf.cast(mask[..., None], inputs.dtype), tf.shape(inputs))
    stats = tf.stack([tf.reduce_sum(weights, axes, keepdims=keepdims),
                      tf.reduce_sum(weights * inputs, axes, keepdims=keepdims),
                      tf.reduce_sum(weights * tf.square(inputs), axes, keepdims=keepdims)])
    count, total, squares = tf.unstack(collectives.allreduce(stats, op=Sum))
    mean = total / count
    # Var[X] = E[X^2] - E[X]^2, clipped at 0 against rounding.
    return mean, tf.maximum(squares / count - tf.square(mean), 0.0)


@keras.saving.register_keras_serializable(package="horovodcpp")
class SyncBatchNormalization(keras.layers.BatchNormalization):
    __doc__ = _DOC

    def __init__(self, fused=False, **kwargs):
        _refuse_fused(fused)
        super().__init__(**kwargs)

    def _moments(self, inputs, mask):
        if _core.size() == 1:
            return super()._moments(inputs, mask)
        return _global_moments(inputs, self._reduction_axes, mask)


def _keras2_class(tf_keras):
    """The layer on tf_keras's BatchNormalization, whose statistics come
    from _calculate_mean_and_var (as Horovod overrides it)."""
    class SyncBatchNormalization(tf_keras.layers.BatchNormalization):
        __doc__ = _DOC

        def __init__(self, fused=False, **kwargs):
            _refuse_fused(fused)
            super().__init__(fused=False, **kwargs)

        def _calculate_mean_and_var(self, inputs, reduction_axes, keep_dims, mask=None):
            if _core.size() == 1:
                return super()._calculate_mean_and_var(inputs, reduction_axes, keep_dims, mask)
            return _global_moments(inputs, reduction_axes, mask, keep_dims)
    return SyncBatchNormalization


_LEGACY_KERAS = legacy_keras()
if _LEGACY_KERAS is not None:  # the Keras 3 class stays registered (saved models)
    SyncBatchNormalization = _keras2_class(_LEGACY_KERAS)  # noqa: F811
