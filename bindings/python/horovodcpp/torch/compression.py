"""Gradient compression, as in horovod.torch: Compression.none, .fp16 and
.bf16 convert around the allreduce; Compression.twobit(...) (2-bit with
error feedback) and Compression.powersgd(...) are instances with per-tensor
state that reduce by themselves (reducing_compressor.py)."""
import torch

from horovodcpp.common.compression import (  # noqa: F401
    Compressor, NoneCompressor, cast_compressor)
from horovodcpp.torch.powersgd import PowerSGDCompressor
from horovodcpp.torch.two_bit import TwoBitCompressor


def _is_floating(tensor):
    return tensor.dtype.is_floating_point


def _cast(tensor, dtype):
    return tensor.to(dtype)


FP16Compressor = cast_compressor(torch.float16, _is_floating, _cast)
BF16Compressor = cast_compressor(torch.bfloat16, _is_floating, _cast)


class Compression:
    """The compressors DistributedOptimizer and allreduce accept: the casts
    as they are, the stateful ones as an instance per model, e.g.
    Compression.twobit(threshold=0.5) or Compression.powersgd(4)."""
    none = NoneCompressor
    fp16 = FP16Compressor
    bf16 = BF16Compressor
    twobit = TwoBitCompressor
    powersgd = PowerSGDCompressor
