"""Compression.twobit: MXNet's 2-bit gradient compression with error
feedback (kvstore --gc-type 2bit --gc-threshold). Each element of
gradient + residual is sent as +threshold, -threshold or 0; what was not
sent stays in this rank's residual and is added to the next step's
gradient, so nothing is lost, only delayed. Four elements per byte: 16x
fewer bytes than float32.

The reduction gathers every rank's packed codes (an allgather) and each
rank decodes and sums them. A sum of ternary values is not ternary: a
reduction on the packed form would have to widen it (an int8 allreduce sends
only 4x fewer bytes). Gathering keeps each rank's send at n/4 bytes; it
receives (size - 1) * n/4, which beats a float32 ring allreduce (about 8n
bytes each way per rank) up to about 30 ranks. Every rank decodes the same
gathered bytes, so every rank gets the same result."""
import torch

from horovodcpp import _core
from horovodcpp.common.basics import Average
from horovodcpp.common.process_sets import core_set
from horovodcpp.torch.handles import register, synchronize
from horovodcpp.torch.core_ops import _core_tensor, _from_core, _stream
from horovodcpp.torch.reducing_compressor import ReducingCompressor

_SHIFTS = torch.tensor([0, 2, 4, 6], dtype=torch.uint8)
_HEADER = 4  # bytes before the codes: the sender's threshold (float32)


def encode(gradient, residual, threshold, prescale_factor, codes):
    """Quantizes prescale_factor * gradient + residual (a 1-D float tensor,
    or None: zeros) into `codes` (uint8, (n + 3) // 4): code 1 for values
    >= threshold (sent as +threshold), 2 for <= -threshold (sent as
    -threshold), 0 otherwise; four 2-bit codes per byte, the first in the
    lowest bits. Returns the new residual (values - what is sent). CPU
    tensors go through the core's one-pass codec, CUDA ones through torch."""
    if gradient.is_cuda:
        values = gradient * prescale_factor + (0 if residual is None else residual)
        packed, residual = encode_with_torch(values, threshold)
        codes.copy_(packed)
        return residual
    add_residual = residual is not None
    if residual is None:
        residual = torch.empty_like(gradient)
    _core.two_bit_encode(_core_tensor(gradient), _core_tensor(residual), _core_tensor(codes),
                         prescale_factor, add_residual, threshold)
    return residual


def encode_with_torch(values, threshold):
    """encode() in torch operations: (packed codes, residual) of values."""
    positive, negative = values >= threshold, values <= -threshold
    residual = torch.where(positive, values - threshold,
                           torch.where(negative, values + threshold, values))
    codes = positive.to(torch.uint8) | (negative.to(torch.uint8) << 1)
    codes = torch.cat([codes, codes.new_zeros(-codes.numel() % 4)]).view(-1, 4)
    return (codes << _SHIFTS).sum(1, dtype=torch.uint8), residual


def decode_sum(rows, numel, scale, dtype):
    """rows: [ranks, bytes] holding codes from encode() after a _HEADER-byte
    header. scale * the sum over rows of the sent values in threshold units,
    the first `numel` elements, as `dtype` (float32 or float64)."""
    if rows.is_cuda:
        return decode_sum_with_torch(rows[:, _HEADER:], numel).to(dtype) * scale
    out = torch.empty(numel, dtype=dtype)
    _core.two_bit_decode_sum(_core_tensor(rows), _HEADER, scale, _core_tensor(out))
    return out


def decode_sum_with_torch(packed, numel):
    """The sum over rows of `packed` codes in threshold units (integers in
    [-rows, rows]), the first `numel` elements, in torch operations."""
    codes = ((packed.unsqueeze(-1) >> _SHIFTS) & 3).view(packed.shape[0], -1)[:, :numel]
    return (codes & 1).sum(0, dtype=torch.int32) - (codes >> 1).sum(0, dtype=torch.int32)


class TwoBitCompressor(ReducingCompressor):
    """Compression.twobit(threshold=0.5, min_elements=1024): 2-bit with
    error feedback. The threshold is in gradient units (after prescale);
    every rank must use the same one (checked on every step). Tensors of
    fewer than min_elements elements (biases, small layers: few bytes, and
    often the largest gradients) go as an exact allreduce, as DDP's PowerSGD
    sends vectors; 0 compresses every tensor, as MXNet does."""
    kind = "Compression.twobit"

    def __init__(self, threshold=0.5, min_elements=1024):
        super().__init__()
        if not threshold > 0:
            raise ValueError("Compression.twobit: threshold must be > 0, got {}".format(threshold))
        self.threshold = float(threshold)
        self.min_elements = int(min_elements)

    def reduce_async(self, tensor, name, op, prescale_factor, postscale_factor, process_set):
        state = self._state_of(tensor, name, op, process_set)
        if tensor.numel() < self.min_elements:
            return self._exact_async(tensor, name, op, prescale_factor, postscale_factor,
                                     process_set)
        work_dtype = torch.float64 if tensor.dtype == torch.float64 else torch.float32
        gradient = tensor.detach().reshape(-1).to(work_dtype).contiguous()
        self._check_shape(state, "residual", gradient.shape, name, process_set)
        row = torch.empty(1, _HEADER + (gradient.numel() + 3) // 4, dtype=torch.uint8,
                          device=gradient.device)  # this rank's row of the gathered codes
        row[0, :_HEADER] = torch.tensor([self.threshold]).view(torch.uint8)
        state["residual"] = encode(gradient, state.get("residual"), self.threshold,
                                   prescale_factor, row[0, _HEADER:])
        work = _core.allgather_async(_core_tensor(row), "allreduce." + name,
                                     core_set(process_set), _stream(row))
        handle = register([work], lambda: _from_core(work.output(), row))

        def finish():
            rows = synchronize(handle)
            header = rows.new_empty(rows.shape[0], _HEADER).copy_(rows[:, :_HEADER])
            thresholds = header.view(torch.float32).view(-1)
            if not bool((thresholds == thresholds[0]).all()):
                raise ValueError("Compression.twobit: ranks disagree on the threshold of {!r}: {}"
                                 .format(name, ", ".join("rank {}: {}".format(r, t) for r, t in
                                                         zip(process_set.ranks or
                                                             range(len(thresholds)),
                                                             thresholds.tolist()))))
            scale = self.threshold * postscale_factor
            if op == Average:
                scale /= rows.shape[0]
            total = decode_sum(rows, gradient.numel(), scale, work_dtype)
            return total.to(tensor.dtype).view(tensor.shape)
        return finish
