"""Compression.powersgd: PowerSGD (Vogels et al., NeurIPS 2019) as
PyTorch DDP's powerSGD_hook computes it. A gradient viewed as an n x m
matrix M (the first dimension by the rest), plus this rank's error from
earlier steps, is approximated by rank r factors: P = M Q is averaged over
the ranks and orthogonalized, Q = M^T P is averaged, and P Q^T is the
result; M - P Q^T stays in the error. Q is kept for the next step (warm
start), so one power iteration per step suffices. Two allreduces of
(n + m) r elements replace one of n m.

Sent uncompressed, as an ordinary allreduce and without error feedback,
as in DDP: every tensor before its start_powerSGD_iter-th reduction,
tensors of fewer than two dimensions, and those where n m is not more than
min_compression_rate times (n + m) r."""
import zlib

import torch

from horovodcpp.common.basics import Sum
from horovodcpp.torch import core_ops
from horovodcpp.torch.handles import synchronize
from horovodcpp.torch.reducing_compressor import ReducingCompressor


def orthogonalize(matrix):
    """The columns of `matrix` made orthonormal (reduced QR's Q; the same
    on every rank for the same input)."""
    return torch.linalg.qr(matrix).Q


class PowerSGDCompressor(ReducingCompressor):
    """Compression.powersgd(matrix_approximation_rank=1,
    start_powerSGD_iter=1000, min_compression_rate=2, random_seed=0):
    DDP's PowerSGDState parameters of the same names (error feedback and
    warm start always on). Every rank must use the same ones."""
    kind = "Compression.powersgd"

    def __init__(self, matrix_approximation_rank=1, start_powerSGD_iter=1000,
                 min_compression_rate=2, random_seed=0):
        super().__init__()
        if matrix_approximation_rank < 1 or start_powerSGD_iter < 0:
            raise ValueError("Compression.powersgd: matrix_approximation_rank must be >= 1 and "
                             "start_powerSGD_iter >= 0")
        self.matrix_approximation_rank = int(matrix_approximation_rank)
        self.start_powerSGD_iter = int(start_powerSGD_iter)
        self.min_compression_rate = float(min_compression_rate)
        self.random_seed = int(random_seed)
        self._waiting = []  # compressed tensors whose P is being reduced

    def _shared_fields(self):
        return ("step", "q")

    def reduce_async(self, tensor, name, op, prescale_factor, postscale_factor, process_set):
        state = self._state_of(tensor, name, op, process_set)
        step = state.get("step", 0)
        state["step"] = step + 1
        n = tensor.shape[0] if tensor.dim() >= 2 else 1
        m = tensor.numel() // max(n, 1)
        r = min(n, m, self.matrix_approximation_rank)
        if (tensor.dim() < 2 or step < self.start_powerSGD_iter or
                n * m <= self.min_compression_rate * (n + m) * r):
            return self._exact_async(tensor, name, op, prescale_factor, postscale_factor,
                                     process_set)

        work_dtype = torch.float64 if tensor.dtype == torch.float64 else torch.float32
        matrix = tensor.detach().reshape(n, m).to(work_dtype)  # read only: may be the gradient
        self._check_shape(state, "error", (n, m), name, process_set)
        self._check_shape(state, "q", (m, r), name, process_set)
        if prescale_factor != 1.0:
            matrix = matrix * prescale_factor
        if "error" in state:
            matrix = matrix + state["error"]
        if "q" not in state:
            seed = self.random_seed ^ zlib.crc32(name.encode())
            generator = torch.Generator().manual_seed(seed)
            q = torch.randn(m, r, generator=generator, dtype=work_dtype)  # on the CPU: the
            state["q"] = orthogonalize(q).to(tensor.device)  # same numbers on every rank
        p = matrix @ state["q"].to(work_dtype)
        entry = dict(matrix=matrix, p=p, name=name, op=op, process_set=process_set)
        entry["p_handle"] = core_ops.allreduce_async_(p, name=name, op=op,
                                                     process_set=process_set)
        self._waiting.append(entry)

        def finish():
            if "q_handle" not in entry:
                self._reduce_q()
            q = synchronize(entry["q_handle"])
            approximation = entry["p"] @ q.t()
            # Each rank's error is its matrix less its share of the result.
            share = approximation / process_set.size() if op == Sum else approximation
            state["error"], state["q"] = matrix - share, q
            if postscale_factor != 1.0:
                approximation = approximation * postscale_factor
            return approximation.to(tensor.dtype).view(tensor.shape)
        return finish

    def _reduce_q(self):
        """Second round for every tensor whose P was started: P averaged is
        orthogonalized and Q = M^T P reduced, all started before any is
        waited for, so they are fused as the Ps were."""
        waiting, self._waiting = self._waiting, []
        for entry in waiting:
            entry["p"] = orthogonalize(synchronize(entry["p_handle"]))
            q = (entry["p"].t() @ entry["matrix"]).t().contiguous()  # M^T P, faster so
            entry["q_handle"] = core_ops.allreduce_async_(
                q, name=entry["name"] + ".powersgd_q", op=entry["op"],
                process_set=entry["process_set"])

    def broadcast_state(self, *args, **kwargs):
        self._waiting = []  # a round that failed part way (then elastic syncs) is abandoned
        super().broadcast_state(*args, **kwargs)

    def reset(self):
        super().reset()
        self._waiting = []
