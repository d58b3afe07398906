"""torch_distributed_bench: torch.distributed on the horovodcpp backend next to
torch's own gloo backend, in one job, taking turns.

    hvdrun -np 2 PYTHON bench/torch_distributed_bench.py [--sizes 4,64K,1M,16M,64M]
    (or torchrun --nproc_per_node=2 bench/torch_distributed_bench.py)

PYTHON has a PyTorch the backend supports (scripts/setup.sh --tests puts one
in ~/.cache/horovodcpp/torch-venv). The job's group is horovodcpp's; a Gloo
group of the same ranks is made beside it. For each size (float32, SUM, in
place) the two groups take turns, `--rounds` times `--iters` calls each; every
call starts after a barrier, and a time is the largest over the ranks of each
rank's average. Also timed, in the same turns: the Horovod API's in-place
allreduce (horovodcpp.torch.allreduce_) and the core call under both
(_core.allreduce_async + wait), so the table shows what the process group
adds on top. Then a DDP training step of an MLP (`--mlp`, default 4 layers of
2048) on each group, in turns. Prints one table per part; ratios above 1 mean
horovodcpp was faster (gloo time / horovodcpp time; busbw ratios the other
way round).
"""
import argparse
import contextlib
import datetime
import io
import os
import socket
import time

import torch
import torch.distributed as dist

import horovodcpp.torch as hvd
import horovodcpp.torch.distributed  # noqa: F401  (registers the backend)
from horovodcpp import _core
from horovodcpp.torch.core_ops import _core_tensor

MIB = 1 << 20


def parse_bytes(text):
    t = text.strip().upper().rstrip("B").rstrip("I")
    scale = {"K": 1024, "M": MIB, "G": 1024 * MIB}.get(t[-1:], 1)
    return int(t[:-1] if scale > 1 else t) * scale


def timed(call, iters):
    """This rank's average seconds per call, each after a barrier."""
    total = 0.0
    for _ in range(iters):
        _core.barrier()
        start = time.perf_counter()
        call()
        total += time.perf_counter() - start
    return total / iters


def slowest(seconds):
    t = torch.tensor([seconds], dtype=torch.float64)
    hvd.allreduce_(t, op=hvd.Max, name="bench.slowest")
    return t.item()


def allreduce_table(args, gloo):
    n = dist.get_world_size()
    bus = 2.0 * (n - 1) / n if n > 1 else 1.0
    print("\n## torch.distributed.all_reduce: horovodcpp vs gloo (%d ranks)" % n)
    print("| size | horovodcpp | gloo | gloo/horovodcpp time | Horovod API | core call "
          "| process group over core |")
    print("|---|---|---|---|---|---|---|")
    for size in args.sizes:
        t = torch.ones(max(size // 4, 1))
        iters = args.iters if size <= 4 * MIB else max(3, args.iters // 4)
        calls = {
            "horovodcpp": lambda: dist.all_reduce(t),
            "gloo": lambda: dist.all_reduce(t, group=gloo),
            "api": lambda: hvd.allreduce_(t, op=hvd.Sum, name="bench.api"),
            "core": lambda: _core.allreduce_async(_core_tensor(t), None, "bench.core",
                                                  hvd.Sum).wait(),
        }
        for call in calls.values():  # warm-up (and the response cache)
            for _ in range(3):
                call()
        best = {k: float("inf") for k in calls}
        for _ in range(args.rounds):
            for name, call in calls.items():
                best[name] = min(best[name], slowest(timed(call, iters)))

        def shown(seconds):
            if size <= 64 * 1024:
                return "%.1f us" % (seconds * 1e6)
            return "%.2f GB/s" % (size / seconds * bus / 1e9)
        print("| %s | %s | %s | %.1fx | %s | %s | %.1f us |" % (
            human(size), shown(best["horovodcpp"]), shown(best["gloo"]),
            best["gloo"] / best["horovodcpp"], shown(best["api"]), shown(best["core"]),
            (best["horovodcpp"] - best["core"]) * 1e6))


def human(size):
    for unit, scale in (("GiB", 1 << 30), ("MiB", MIB), ("KiB", 1024)):
        if size >= scale:
            return "%d %s" % (size // scale, unit)
    return "%d B" % size


def ddp_table(args, gloo):
    from torch.nn.parallel import DistributedDataParallel as DDP
    layers, width = args.mlp
    print("\n## DDP training step, MLP of %d x %d (%.1f M parameters), batch %d per rank"
          % (layers, width, layers * width * width / 1e6, args.batch))
    print("| group | step (best round) | steps/s | gloo/horovodcpp |")
    print("|---|---|---|---|")

    def model():
        torch.manual_seed(0)
        mods = []
        for _ in range(layers):
            mods += [torch.nn.Linear(width, width), torch.nn.ReLU()]
        return torch.nn.Sequential(*mods)
    runs = {}
    for name, group in (("horovodcpp", dist.group.WORLD), ("gloo", gloo)):
        ddp = DDP(model(), process_group=group)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=1e-4)
        x = torch.randn(args.batch, width)

        def step(ddp=ddp, optimizer=optimizer, x=x):
            optimizer.zero_grad()
            ddp(x).square().mean().backward()
            optimizer.step()
        step()
        runs[name] = step
    best = {k: float("inf") for k in runs}
    for _ in range(args.rounds):
        for name, step in runs.items():
            best[name] = min(best[name], slowest(timed(step, args.steps)))
    for name in runs:
        print("| %s | %.1f ms | %.2f | %s |" % (name, best[name] * 1e3, 1 / best[name],
                                              "%.2fx" % (best["gloo"] / best[name])
                                              if name == "horovodcpp" else ""))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="4,64K,1M,16M,64M",
                   type=lambda s: [parse_bytes(x) for x in s.split(",")])
    p.add_argument("--iters", type=int, default=40)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--mlp", default="4,2048", type=lambda s: tuple(int(x) for x in s.split(",")))
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--ddp", choices=("on", "off"), default="on")
    p.add_argument("--iface", default=None, help="gloo's network interface (two hosts)")
    p.add_argument("--threads", type=int, default=None, help="torch threads per rank")
    p.add_argument("--tag", default=None, help="ignored: marks the job's processes")
    args = p.parse_args()
    if args.iface:
        os.environ["GLOO_SOCKET_IFNAME"] = args.iface
    if args.threads:
        torch.set_num_threads(args.threads)
    dist.init_process_group("horovodcpp", timeout=datetime.timedelta(seconds=300))
    gloo = dist.new_group(backend="gloo")
    if dist.get_rank() == 0:
        print("# torch_distributed_bench: torch %s, %d ranks on %s (%d hardware threads), "
              "horovodcpp on %s, load %s" % (torch.__version__, dist.get_world_size(),
                                              socket.gethostname(), os.cpu_count(),
                                              _core.backend_name(),
                                              open("/proc/loadavg").read().split()[0]))
    # Every rank times; rank 0 prints.
    quiet = contextlib.redirect_stdout(io.StringIO()) if dist.get_rank() else \
        contextlib.nullcontext()
    with quiet:
        allreduce_table(args, gloo)
        if args.ddp == "on":
            ddp_table(args, gloo)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
