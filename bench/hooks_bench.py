"""hooks_bench: what DistributedOptimizer's per-gradient hooks cost a
training step on the host, next to DDP, in one job. Run under hvdrun:

    hvdrun -np 1 --gloo python3 bench/hooks_bench.py [--device cpu|cuda] [--rounds 3]

The model has 161 parameters (as many as ResNet-50) of 64 elements and
almost no arithmetic, so a step's time is what the host spends on it. Each
round times, one after the other, the step (zero_grad, forward, backward,
step; a CUDA step ends with torch.cuda.synchronize()) with:
  none       no communication
  ddp        DistributedDataParallel (gloo for CPU tensors, nccl for CUDA)
  hvd        hvd.DistributedOptimizer as at one rank: every gradient
             reduced at step(), fused
  hvd-hooks  its per-gradient hooks (HOROVOD_ELASTIC=1: what a job of
             several ranks runs): each gradient's allreduce starts in backward
Prints per variant the median step (largest over ranks) of each round and,
from the fastest round, the cost per gradient over `none`; then
hvd-hooks / ddp of those costs (below 1: the hooks cost the host less).
"""
import argparse
import os
import statistics
import tempfile
import time

import torch
import torch.distributed as dist

import horovodcpp.torch as hvd

GRADIENTS = 161
VARIANTS = ("none", "ddp", "hvd", "hvd-hooks")


class ManyParameters(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = torch.nn.ParameterList(
            [torch.nn.Parameter(torch.ones(64)) for _ in range(GRADIENTS)])

    def forward(self, x):
        for scale in self.scales:
            x = x * scale
        return x.sum()


def make_step(variant, device):
    torch.manual_seed(0)
    model = ManyParameters().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    forward = model
    if variant == "ddp":
        forward = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None)
    elif variant.startswith("hvd"):
        previous = os.environ.get("HOROVOD_ELASTIC")
        if variant == "hvd-hooks":
            os.environ["HOROVOD_ELASTIC"] = "1"  # the hooks even at one rank
        try:
            optimizer = hvd.DistributedOptimizer(optimizer,
                                                 named_parameters=model.named_parameters())
        finally:
            if previous is None:
                os.environ.pop("HOROVOD_ELASTIC", None)
    x = torch.randn(64, device=device)

    def step():
        optimizer.zero_grad()
        forward(x).backward()
        optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    return step


def largest(seconds):
    t = torch.tensor([seconds], dtype=torch.float64)
    return hvd.allreduce(t, op=hvd.Max, name="hooks_bench.largest").item()


def median_step(step, warmup, steps):
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return largest(statistics.median(times))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--steps", type=int, default=300)
    a = p.parse_args()
    hvd.init()
    device = torch.device("cpu")
    if a.device == "cuda":
        device = torch.device("cuda", hvd.local_rank() % torch.cuda.device_count())
        torch.cuda.set_device(device)
    directory = hvd.broadcast_object(tempfile.mkdtemp(prefix="hooks_bench_") if hvd.rank() == 0
                                     else "", root_rank=0, name="hooks_bench.dir")
    dist.init_process_group("nccl" if a.device == "cuda" else "gloo",
                            init_method="file://" + os.path.join(directory, "store"),
                            rank=hvd.rank(), world_size=hvd.size())
    seconds = {v: [] for v in VARIANTS}
    for _ in range(a.rounds):
        for variant in VARIANTS:
            seconds[variant].append(median_step(make_step(variant, device), a.warmup, a.steps))
    if hvd.rank() == 0:
        print("# hooks_bench: %d ranks, %s tensors, torch %s; median step per round (us), "
              "then the fastest round's cost per gradient over none"
              % (hvd.size(), a.device, torch.__version__))
        per_gradient = {}
        for variant in VARIANTS:
            per_gradient[variant] = (min(seconds[variant]) - min(seconds["none"])) / GRADIENTS
            print("  %-9s %s  per gradient %.2f us" % (
                variant, " ".join("%8.1f" % (s * 1e6) for s in seconds[variant]),
                per_gradient[variant] * 1e6))
        print("hooks_bench ranks=%d device=%s hooks_per_gradient_us=%.2f ddp_per_gradient_us=%.2f "
              "hooks/ddp=%.2f" % (hvd.size(), a.device, per_gradient["hvd-hooks"] * 1e6,
                                  per_gradient["ddp"] * 1e6,
                                  per_gradient["hvd-hooks"] / per_gradient["ddp"]), flush=True)
    dist.destroy_process_group()
    hvd.shutdown()


if __name__ == "__main__":
    main()
