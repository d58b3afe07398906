#!/usr/bin/env python3
"""gpu_bench: horovodcpp.torch on a GPU next to torch.distributed, side by
side in one process. bench/gpu_bench.sh runs the three parts under hvdrun
and is the one command to use; each part is a worker mode of this script:

  --mode allreduce   (hvdrun -np 1 --gloo)  hvd.allreduce_ of a CUDA float32
      tensor against torch.distributed's NCCL all_reduce (world size 1),
      4 B to 256 MiB, alternated. Two timings per size, both over a loop of
      calls: "pipelined" (calls back to back, one torch.cuda.synchronize()
      at the end: the cost of issuing one) and "synchronized" (each call
      followed by torch.cuda.synchronize(): the whole round trip).
  --mode train       (hvdrun -np 1 --gloo)  the ResNet-50 training step
      (torchvision, synthetic 224x224 images, batch 64, SGD momentum 0.9;
      bf16 autocast and fp32) with no communication, with DDP (NCCL, world
      size 1), with hvd.DistributedOptimizer as it runs at one rank (no
      hooks: every gradient reduced at step(), fused), and with its
      per-gradient hooks (HOROVOD_ELASTIC=1: what runs at several ranks);
      rounds alternate the variants. Then one timeline per hvd variant
      counts the NCCL launches of a step.
  --mode compiled    (hvdrun -np 1 --gloo)  the same step in bf16 under
      torch.compile (inductor): DDP (nccl, torch's DDPOptimizer) against
      the per-gradient hooks with hvd.compile_backend, both split at 25 MB;
      compiled once each, then rounds alternate.
  --mode staged      (HOROVODCPP_GPU_OPERATIONS=gloo hvdrun -np 2 --gloo,
      both ranks on GPU 0) hvd.allreduce_ of CUDA tensors staged through
      host memory against torch.distributed gloo with CUDA tensors, and
      the staging copies alone (to pinned host memory, wait, back) with no
      communication: the floor of any staged design with that many ranks
      on the GPU.

Every figure is measured by the run that prints it; ratios are
horovodcpp / peer for times (below 1: horovodcpp faster) and horovodcpp /
peer for img/s (above 1: horovodcpp faster). See bench/README.md, "train_bench.py, gpu_bench.sh, compression_bench.sh, scale_bench.sh".
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist

import horovodcpp.torch as hvd

MIB = 1 << 20
SIZES = [4, 4096, 64 * 1024, MIB, 16 * MIB, 64 * MIB, 256 * MIB]


def human(nbytes):
    for unit, scale in (("MiB", MIB), ("KiB", 1024)):
        if nbytes >= scale:
            return "%d %s" % (nbytes // scale, unit)
    return "%d B" % nbytes


def iterations(nbytes, small):
    return max(10, min(small, (2048 * MIB) // max(nbytes, 1)))


def timed(op, iters, synchronized):
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        op()
        if synchronized:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters


def allreduce_ops(nbytes, device, name, small_iters, warmup):
    """horovodcpp's and torch.distributed's in-place Sum allreduce of a
    float32 tensor of `nbytes` on `device`, warmed up (communicators,
    buffers), and how many calls one timing makes."""
    t = torch.ones(max(nbytes // 4, 1), device=device)
    ops = {
        "hvd": lambda: hvd.allreduce_(t, op=hvd.Sum, name=name),
        "torch": lambda: dist.all_reduce(t),
    }
    for op in ops.values():
        for _ in range(warmup):
            op()
    return ops, iterations(nbytes, small_iters)


def staging_copies(nbytes, device):
    """One staged call's GPU work without the communication: the tensor to
    pinned host memory, a wait for it, and back (as StagedOperations does)."""
    t = torch.ones(max(nbytes // 4, 1), device=device)
    host = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
    stream = torch.cuda.Stream(device)

    def op():
        stream.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(stream):
            host.copy_(t, non_blocking=True)
            stream.synchronize()
            t.copy_(host, non_blocking=True)
        torch.cuda.current_stream(device).wait_stream(stream)
    for _ in range(3):
        op()
    return op


def init_torch(backend, rank, size, directory):
    # A file in a directory every rank sees (rank 0 makes it, hvd broadcasts it).
    dist.init_process_group(backend, init_method="file://" + os.path.join(directory, "store"),
                            rank=rank, world_size=size)


def shared_directory():
    path = tempfile.mkdtemp(prefix="gpu_bench_") if hvd.rank() == 0 else ""
    return hvd.broadcast_object(path, root_rank=0, name="gpu_bench.dir")


def max_over_ranks(seconds):
    t = torch.tensor([seconds], dtype=torch.float64)
    return hvd.allreduce(t, op=hvd.Max, name="gpu_bench.max").item()


def report(record, out):
    print(json.dumps(record), file=out, flush=True)


def mode_allreduce(a, out):
    device = torch.device("cuda", hvd.local_rank())
    torch.cuda.set_device(device)
    init_torch("nccl", 0, 1, shared_directory())
    print("# allreduce of a CUDA float32 tensor, Sum, in place, one rank: horovodcpp "
          "hvd.allreduce_ vs torch.distributed NCCL all_reduce; median of %d alternated rounds"
          % a.rounds)
    print("# %-9s %9s | %12s %12s %7s | %12s %12s %7s" % (
        "size", "iters", "hvd pipel.", "torch pipel.", "ratio", "hvd sync", "torch sync",
        "ratio"))
    for nbytes in a.sizes:
        ops, iters = allreduce_ops(nbytes, device, "gpu_bench.allreduce", a.iters, warmup=5)
        times = {(k, s): [] for k in ops for s in (False, True)}
        for _ in range(a.rounds):
            for synchronized in (False, True):
                for name, op in ops.items():
                    times[(name, synchronized)].append(timed(op, iters, synchronized))
        med = {k: statistics.median(v) * 1e6 for k, v in times.items()}
        print("  %-9s %9d | %12.1f %12.1f %7.2f | %12.1f %12.1f %7.2f" % (
            human(nbytes), iters, med[("hvd", False)], med[("torch", False)],
            med[("hvd", False)] / med[("torch", False)], med[("hvd", True)],
            med[("torch", True)], med[("hvd", True)] / med[("torch", True)]))
        report({"part": "allreduce", "bytes": nbytes, "iters": iters,
                "us": {"%s_%s" % (k, "sync" if s else "pipelined"): [x * 1e6 for x in v]
                       for (k, s), v in times.items()}}, out)
    dist.destroy_process_group()


class Step:
    """One variant of the training step on a fresh ResNet-50."""

    def __init__(self, variant, dtype, batch_size, compiled=False):
        import torchvision
        torch.manual_seed(0)
        self.model = torchvision.models.resnet50().cuda()
        self.dtype = dtype
        optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)
        self.forward = self.model
        if variant == "ddp":
            self.forward = torch.nn.parallel.DistributedDataParallel(self.model, device_ids=[0])
            if compiled:  # torch's DDPOptimizer splits the graph at DDP's buckets
                self.forward = torch.compile(self.forward)
        elif compiled:  # split at buckets of the same size as DDP's default
            self.forward = torch.compile(
                self.model, backend=hvd.compile_backend(backend="inductor", bucket_cap_mb=25))
        if variant.startswith("hvd"):
            hooks = variant == "hvd-hooks"
            previous = os.environ.get("HOROVOD_ELASTIC")
            if hooks:
                os.environ["HOROVOD_ELASTIC"] = "1"  # the hooks of a job of several ranks
            try:
                optimizer = hvd.DistributedOptimizer(
                    optimizer, named_parameters=self.model.named_parameters())
            finally:
                if hooks and previous is None:
                    del os.environ["HOROVOD_ELASTIC"]
        self.optimizer = optimizer
        self.x = torch.randn(batch_size, 3, 224, 224, device="cuda")
        self.y = torch.randint(0, 1000, (batch_size,), device="cuda")
        self.loss = torch.nn.CrossEntropyLoss()

    def __call__(self):
        self.optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.dtype == "bf16"):
            loss = self.loss(self.forward(self.x), self.y)
        loss.backward()
        self.optimizer.step()


def launches_per_step(path, steps):
    """Allreduce launches (a fused batch's tensors share one start) and
    gradients per step, from the timeline at `path`."""
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    rows = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    spans = [e for e in events if e.get("name", "").endswith("_ALLREDUCE")
             and not rows.get(e.get("tid"), "").startswith("allreduce.gpu_bench")]
    return len({e["ts"] for e in spans}) / steps, len(spans) / steps


def mode_train(a, out):
    torch.cuda.set_device(hvd.local_rank())
    torch.backends.cudnn.benchmark = True
    init_torch("nccl", 0, 1, shared_directory())
    variants = ["none", "ddp", "hvd", "hvd-hooks"]
    results = {(d, v): [] for d in a.dtypes for v in variants}
    print("# ResNet-50 training step, synthetic 224x224, batch %d, SGD momentum, one GPU: "
          "img/s per round (%d warm-up + %d timed steps), rounds alternate the variants"
          % (a.batch_size, a.warmup, a.steps))
    for r in range(a.rounds):
        for dtype in a.dtypes:
            for variant in variants:
                step = Step(variant, dtype, a.batch_size)
                for _ in range(a.warmup):
                    step()
                torch.cuda.synchronize()
                start = time.perf_counter()
                for _ in range(a.steps):
                    step()
                torch.cuda.synchronize()
                ips = a.batch_size * a.steps / (time.perf_counter() - start)
                results[(dtype, variant)].append(ips)
                print("  round %d %-4s %-9s %8.1f img/s" % (r + 1, dtype, variant, ips), flush=True)
                del step
                torch.cuda.empty_cache()
    print("# median img/s (min-max); ratios of medians")
    for dtype in a.dtypes:
        med = {v: statistics.median(results[(dtype, v)]) for v in variants}
        for v in variants:
            xs = results[(dtype, v)]
            print("  %-4s %-9s %8.1f (%.1f-%.1f, spread %.1f%%)" % (
                dtype, v, med[v], min(xs), max(xs), 100 * (max(xs) - min(xs)) / med[v]))
        print("  %-4s hvd/ddp %.3f  hvd-hooks/ddp %.3f  hvd/none %.3f  ddp/none %.3f" % (
            dtype, med["hvd"] / med["ddp"], med["hvd-hooks"] / med["ddp"],
            med["hvd"] / med["none"], med["ddp"] / med["none"]))
        report({"part": "train", "dtype": dtype,
                "img_per_s": {v: results[(dtype, v)] for v in variants}}, out)
    if a.timeline_dir:
        for variant in ("hvd", "hvd-hooks"):
            step = Step(variant, "bf16", a.batch_size)
            for _ in range(a.warmup):
                step()
            path = os.path.join(a.timeline_dir, "timeline-resnet50-bf16-%s.json" % variant)
            hvd.start_timeline(path)
            for _ in range(5):
                step()
            torch.cuda.synchronize()
            time.sleep(0.1)  # the poller ends each event once it sees the GPU done
            hvd.stop_timeline()
            launches, tensors = launches_per_step(path, 5)
            print("# timeline %s: %.1f allreduce launches per step for %.0f gradients (%s)"
                  % (variant, launches, tensors, path))
            report({"part": "timeline", "variant": variant, "launches_per_step": launches,
                    "tensors_per_step": tensors}, out)
            del step
    dist.destroy_process_group()


def mode_compiled(a, out):
    """The compiled ResNet-50 (bf16): DDP on nccl against the per-gradient
    hooks under hvd.compile_backend, both split at 25 MB buckets."""
    torch.cuda.set_device(hvd.local_rank())
    torch.backends.cudnn.benchmark = True
    init_torch("nccl", 0, 1, shared_directory())
    variants = ["ddp", "hvd-hooks"]
    steps = {}
    for variant in variants:
        start = time.perf_counter()
        steps[variant] = Step(variant, "bf16", a.batch_size, compiled=True)
        for _ in range(a.warmup):
            steps[variant]()
        torch.cuda.synchronize()
        print("# compiled %s: built and warmed up in %.0f s" % (variant, time.perf_counter() - start),
              flush=True)
    results = {v: [] for v in variants}
    for r in range(a.rounds):
        for variant in variants:
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(a.steps):
                steps[variant]()
            torch.cuda.synchronize()
            results[variant].append(a.batch_size * a.steps / (time.perf_counter() - start))
            print("  round %d compiled bf16 %-9s %8.1f img/s" % (r + 1, variant,
                                                                 results[variant][-1]), flush=True)
    med = {v: statistics.median(results[v]) for v in variants}
    for v in variants:
        xs = results[v]
        print("  compiled bf16 %-9s %8.1f (%.1f-%.1f, spread %.1f%%)" % (
            v, med[v], min(xs), max(xs), 100 * (max(xs) - min(xs)) / med[v]))
    print("  compiled bf16 hvd-hooks/ddp %.3f" % (med["hvd-hooks"] / med["ddp"]))
    report({"part": "compiled", "dtype": "bf16", "img_per_s": results}, out)
    dist.destroy_process_group()


def mode_staged(a, out):
    device = torch.device("cuda", 0)  # every rank on GPU 0
    torch.cuda.set_device(device)
    init_torch("gloo", hvd.rank(), hvd.size(), shared_directory())
    say = print if hvd.rank() == 0 else (lambda *args: None)
    say("# allreduce of CUDA float32 tensors, Sum, in place, %d ranks on one GPU: horovodcpp "
          "staged through host memory (HOROVODCPP_GPU_OPERATIONS=%s) vs torch.distributed gloo "
          "with CUDA tensors; per call, the largest over ranks, median of %d alternated rounds"
          % (hvd.size(), os.environ.get("HOROVODCPP_GPU_OPERATIONS", "?"), a.rounds))
    say("# copies: the staging copies alone (device to pinned host memory, wait, back), no "
        "communication: what any staged allreduce pays on this GPU with this many ranks on it")
    say("# %-9s %7s | %12s %12s %7s | %12s" % ("size", "iters", "hvd (us)", "torch (us)", "ratio",
                                                "copies (us)"))
    for nbytes in a.sizes:
        ops, iters = allreduce_ops(nbytes, device, "gpu_bench.staged", a.iters, warmup=3)
        ops["copies"] = staging_copies(nbytes, device)
        times = {k: [] for k in ops}
        for _ in range(a.rounds):
            for name, op in ops.items():
                hvd.barrier()
                times[name].append(max_over_ranks(timed(op, iters, False)))
        med = {k: statistics.median(v) * 1e6 for k, v in times.items()}
        if hvd.rank() == 0:
            print("  %-9s %7d | %12.1f %12.1f %7.2f | %12.1f" % (
                human(nbytes), iters, med["hvd"], med["torch"], med["hvd"] / med["torch"],
                med["copies"]))
            report({"part": "staged", "bytes": nbytes, "ranks": hvd.size(),
                    "us": {k: [x * 1e6 for x in v] for k, v in times.items()}}, out)
    dist.destroy_process_group()


def parse_sizes(text):
    return [int(x) for x in text.split(",")]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=("allreduce", "train", "compiled", "staged"), required=True)
    p.add_argument("--sizes", type=parse_sizes, default=None, help="bytes, comma-separated")
    p.add_argument("--iters", type=int, default=300, help="calls per timing at small sizes")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--dtypes", default="bf16,fp32", type=lambda s: s.split(","))
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--timeline-dir", default="", help="train: write a timeline per hvd variant")
    p.add_argument("--json", default="", help="append one JSON line per result here")
    a = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("gpu_bench: no CUDA device")
    if a.sizes is None:
        a.sizes = SIZES if a.mode == "allreduce" else [4, MIB, 64 * MIB]
    hvd.init()
    out = open(a.json, "a") if a.json and hvd.rank() == 0 else open(os.devnull, "w")
    {"allreduce": mode_allreduce, "train": mode_train, "compiled": mode_compiled,
     "staged": mode_staged}[a.mode](a, out)
    hvd.shutdown()


if __name__ == "__main__":
    main()
