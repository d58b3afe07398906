"""Gradient compression for the transfer, as in horovod.tensorflow:
Compression.none, Compression.fp16 (and Compression.bf16, as in
horovodcpp.torch)."""
import tensorflow as tf

from horovodcpp.common.compression import (  # noqa: F401
    Compressor, NoneCompressor, cast_compressor)


def _is_floating(tensor):
    return tensor.dtype.is_floating


FP16Compressor = cast_compressor(tf.float16, _is_floating, tf.cast)
BF16Compressor = cast_compressor(tf.bfloat16, _is_floating, tf.cast)


class Compression:
    """The compressors allreduce, DistributedGradientTape and
    DistributedOptimizer accept."""
    none = NoneCompressor
    fp16 = FP16Compressor
    bf16 = BF16Compressor
