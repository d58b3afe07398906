"""Gradient compression, framework-independent: a compressor converts a
tensor before the collective and back after it. Front ends make their
Compression classes with cast_compressor()."""


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


def cast_compressor(wire_dtype, is_floating, cast):
    """Sends floating-point tensors as `wire_dtype` and restores their dtype:
    is_floating(tensor) says which to convert, cast(tensor, dtype) converts."""

    class CastCompressor(Compressor):
        @staticmethod
        def compress(tensor):
            if is_floating(tensor) and tensor.dtype != wire_dtype:
                return cast(tensor, wire_dtype), tensor.dtype
            return tensor, None

        @staticmethod
        def decompress(tensor, ctx):
            return tensor if ctx is None else cast(tensor, ctx)

    return CastCompressor
