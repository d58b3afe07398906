"""Gradient compression for the transfer, as in horovod.torch:
Compression.none, Compression.fp16 and Compression.bf16."""
import torch

from horovodcpp.common.compression import (  # noqa: F401
    Compressor, NoneCompressor, cast_compressor)


def _is_floating(tensor):
    return tensor.dtype.is_floating_point


def _cast(tensor, dtype):
    return tensor.to(dtype)


FP16Compressor = cast_compressor(torch.float16, _is_floating, _cast)
BF16Compressor = cast_compressor(torch.bfloat16, _is_floating, _cast)


class Compression:
    """The compressors DistributedOptimizer and allreduce accept."""
    none = NoneCompressor
    fp16 = FP16Compressor
    bf16 = BF16Compressor
