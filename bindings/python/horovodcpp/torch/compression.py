"""Gradient compression for the transfer, as in horovod.torch:
Compression.none, Compression.fp16 and Compression.bf16."""
import torch


class Compressor:
    """Converts a tensor before the collective and back after it."""

    @staticmethod
    def compress(tensor):
        """Returns (tensor to send, context for decompress)."""
        raise NotImplementedError

    @staticmethod
    def decompress(tensor, ctx):
        raise NotImplementedError


class NoneCompressor(Compressor):
    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


def _cast_compressor(wire_dtype):
    """Sends floating-point tensors as `wire_dtype`, restores their dtype."""

    class CastCompressor(Compressor):
        @staticmethod
        def compress(tensor):
            if tensor.dtype.is_floating_point and tensor.dtype != wire_dtype:
                return tensor.to(wire_dtype), tensor.dtype
            return tensor, None

        @staticmethod
        def decompress(tensor, ctx):
            return tensor if ctx is None else tensor.to(ctx)

    return CastCompressor


FP16Compressor = _cast_compressor(torch.float16)
BF16Compressor = _cast_compressor(torch.bfloat16)


class Compression:
    """The compressors DistributedOptimizer and allreduce accept."""
    none = NoneCompressor
    fp16 = FP16Compressor
    bf16 = BF16Compressor
