"""SyncBatchNormalization of horovod.tensorflow: Keras batch normalization
whose training statistics are those of the global batch."""
import keras
import tensorflow as tf

from horovodcpp import _core
from horovodcpp.common.basics import Sum
from horovodcpp.tensorflow import collectives


@keras.saving.register_keras_serializable(package="horovodcpp")
class SyncBatchNormalization(keras.layers.BatchNormalization):
    """keras.layers.BatchNormalization whose mean and variance in training
    are those of every rank's inputs together: each rank's count, sum and
    sum of squares per channel are summed over the ranks (one allreduce,
    differentiable, so the gradient is that of the global batch too). Exact
    also when ranks hold different batch sizes (Horovod averages the ranks'
    moments, the same for equal sizes). fused=True is refused, as in
    Horovod; masks are honoured as in Keras."""

    def __init__(self, fused=False, **kwargs):
        if fused in (True, None):
            raise ValueError("SyncBatchNormalization does not support fused=True.")
        super().__init__(**kwargs)

    def _moments(self, inputs, mask):
        if _core.size() == 1:
            return super()._moments(inputs, mask)
        axes = self._reduction_axes
        if mask is None:
            weights = tf.ones_like(inputs)
        else:
            weights = tf.broadcast_to(tf.cast(mask[..., None], inputs.dtype), tf.shape(inputs))
        stats = tf.stack([tf.reduce_sum(weights, axes), tf.reduce_sum(weights * inputs, axes),
                          tf.reduce_sum(weights * tf.square(inputs), axes)])
        count, total, squares = tf.unstack(collectives.allreduce(stats, op=Sum))
        mean = total / count
        # Var[X] = E[X^2] - E[X]^2, clipped at 0 against rounding.
        return mean, tf.maximum(squares / count - tf.square(mean), 0.0)
