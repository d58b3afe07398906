"""SyncBatchNorm: batch normalization over the batches of every rank
together, as if one process saw the whole batch."""
import torch
from torch.nn.modules.batchnorm import _BatchNorm

from horovodcpp import _core
from horovodcpp.torch.autograd_ops import allgather


class SyncBatchNorm(_BatchNorm):
    """Drop-in for torch.nn.BatchNorm1d/2d/3d. In training mode the mean and
    variance are those of all ranks' inputs together; in eval mode it uses
    the running statistics like BatchNorm. Every rank must call forward (and
    backward) in the same order. Ranks may have different batch sizes.

    Each rank's per-channel count, mean and sum of squared deviations are
    gathered (one allgather) and combined exactly (Chan et al.), which stays
    accurate where E[x^2] - E[x]^2 would not. The allgather is
    differentiable, so backward needs no hand-written gradient (its
    averaged gradient is scaled back to the sum over ranks).
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError("expected at least 2D input (got {}D input)".format(input.dim()))

    def forward(self, input):
        self._check_input_dim(input)
        if not self.training or _core.size() == 1:
            return super().forward(input)

        channels = input.size(1)
        x = input.transpose(0, 1).reshape(channels, -1).float()  # [C, rows]
        count = x.size(1)
        mean = x.sum(1) / max(count, 1)
        m2 = ((x - mean.unsqueeze(1)) ** 2).sum(1)
        local = torch.cat([mean, m2, x.new_tensor([count])]).unsqueeze(0)
        if local.requires_grad:
            # allgather's backward averages the ranks' gradients (Horovod's
            # convention); the statistics' gradient is their sum.
            local.register_hook(lambda grad: grad * _core.size())
        stats = allgather(local)  # [size, 2C + 1]
        means, m2s, counts = stats[:, :channels], stats[:, channels:-1], stats[:, -1:]
        total = counts.sum()
        mean = (counts * means).sum(0) / total
        squares = m2s.sum(0) + (counts * (means - mean) ** 2).sum(0)
        var = squares / total

        if self.track_running_stats:
            self.num_batches_tracked.add_(1)
            factor = (1.0 / float(self.num_batches_tracked) if self.momentum is None
                      else self.momentum)
            with torch.no_grad():
                unbiased = squares / (total - 1).clamp(min=1)
                self.running_mean.mul_(1 - factor).add_(factor * mean.to(self.running_mean.dtype))
                self.running_var.mul_(1 - factor).add_(factor * unbiased.to(self.running_var.dtype))

        shape = [1, channels] + [1] * (input.dim() - 2)
        out = (input.float() - mean.view(shape)) * torch.rsqrt(var.view(shape) + self.eps)
        if self.affine:
            out = out * self.weight.view(shape) + self.bias.view(shape)
        return out.to(input.dtype)
