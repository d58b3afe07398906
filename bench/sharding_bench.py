"""sharding_bench: one training variant of a ~100M-parameter MLP with Adam,
its step time and memory per rank. bench/sharding_bench.sh runs every
variant in turns and prints the table.

    hvdrun -np N PYTHON bench/sharding_bench.py --variant V [--steps 5]

Variants: distributed (hvd.DistributedOptimizer), zero1 and zero2
(DistributedOptimizer(sharding=1|2)), torch_zero_gloo and
torch_zero_horovodcpp (DistributedDataParallel with torch's
ZeroRedundancyOptimizer on a gloo or a horovodcpp process group).

Rank 0 prints one line of key=value: the step time (the largest over the
ranks of each rank's average over --steps steps, after --warmup), the
optimizer state's bytes on this rank (every tensor of its state) and of the
whole, and the peak resident memory (VmHWM) above what the process held with
the model built (VmRSS then), the largest over the ranks. Each variant runs
in its own job, so the peaks are its own. On a GPU (--device cuda) the peak
is torch.cuda.max_memory_allocated above the model's.
"""
import argparse
import datetime
import os
import time

import torch
import torch.distributed as dist

import horovodcpp.torch as hvd

MIB = 1 << 20


def status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def model_of(layers, width, device):
    torch.manual_seed(0)
    mods = []
    for _ in range(layers):
        mods += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*mods).to(device)


def state_bytes(optimizer, variant):
    """Bytes of this rank's optimizer state (every tensor in it)."""
    if variant.startswith("zero"):
        states = optimizer._inner.state.values()
    elif variant.startswith("torch_zero"):
        states = optimizer.optim.state.values()
    else:
        states = optimizer.state.values()
    return sum(v.numel() * v.element_size() for s in states for v in s.values()
               if torch.is_tensor(v))


def build(variant, model):
    """(module to call, optimizer) of `variant`."""
    if variant == "distributed":
        return model, hvd.DistributedOptimizer(torch.optim.Adam(model.parameters(), lr=1e-4),
                                               named_parameters=model.named_parameters())
    if variant in ("zero1", "zero2"):
        return model, hvd.DistributedOptimizer(torch.optim.Adam(model.parameters(), lr=1e-4),
                                               named_parameters=model.named_parameters(),
                                               sharding=int(variant[-1]))
    from torch.distributed.optim import ZeroRedundancyOptimizer
    from torch.nn.parallel import DistributedDataParallel
    if variant == "torch_zero_gloo":
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:{}".format(
            os.environ["SHARDING_BENCH_PORT"]), rank=hvd.rank(), world_size=hvd.size(),
            timeout=datetime.timedelta(seconds=600))
    else:
        import horovodcpp.torch.distributed  # noqa: F401  (registers the backend)
        dist.init_process_group("horovodcpp", timeout=datetime.timedelta(seconds=600))
    ddp = DistributedDataParallel(model)
    return ddp, ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.Adam,
                                        lr=1e-4)


def slowest(value):
    t = torch.tensor([value], dtype=torch.float64)
    hvd.allreduce_(t, op=hvd.Max, name="bench.max")
    return t.item()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--variant", required=True,
                   choices=("distributed", "zero1", "zero2", "torch_zero_gloo",
                            "torch_zero_horovodcpp"))
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--width", type=int, default=3536)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu")
    args = p.parse_args()
    hvd.init()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if device.type == "cuda":
        device = torch.device("cuda", hvd.local_rank() % torch.cuda.device_count())
        torch.cuda.set_device(device)
    model = model_of(args.layers, args.width, device)
    params = sum(p.numel() for p in model.parameters())
    baseline = (torch.cuda.memory_allocated(device) if device.type == "cuda"
                else status_kib("VmRSS") * 1024)
    module, optimizer = build(args.variant, model)
    x = torch.randn(args.batch, args.width, device=device)

    def step():
        optimizer.zero_grad()
        module(x).square().mean().backward()
        optimizer.step()

    for _ in range(args.warmup):
        step()
    hvd.barrier()
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = slowest((time.perf_counter() - start) / args.steps)
    peak = (torch.cuda.max_memory_allocated(device) if device.type == "cuda"
            else status_kib("VmHWM") * 1024) - baseline
    peak = slowest(peak)
    state = slowest(state_bytes(optimizer, args.variant))
    if hvd.rank() == 0:
        # Adam's whole state: two float32 moments per parameter (and steps).
        print("variant={} ranks={} params={} step_ms={:.1f} state_mib={:.1f} "
              "whole_state_mib={:.1f} peak_above_model_mib={:.1f} torch={} device={}".format(
                  args.variant, hvd.size(), params, seconds * 1e3, state / MIB,
                  2 * 4 * params / MIB, peak / MIB, torch.__version__, device), flush=True)
    if dist.is_initialized():
        dist.destroy_process_group()
    hvd.shutdown()


if __name__ == "__main__":
    main()
