#!/usr/bin/python3
"""torch_allreduce_bench: torch.distributed all_reduce (gloo backend), the peer
that horovodcpp is compared with in bench/run_peers.sh.

Run one process per rank (run_peers.sh does this):

    for r in 0 1; do /usr/bin/python3 bench/torch_allreduce_bench.py \\
        --rank $r --size 2 --init file:///tmp/torch_store & done; wait

Rank and size default to $RANK and $WORLD_SIZE (or $SIZE). For each size:
float32, SUM, in place, dist.all_reduce on the default (gloo) group. Every
iteration starts after dist.barrier(); the time is the largest, over ranks,
of each rank's average (an all_reduce MAX of the averages). Columns and
definitions follow allreduce_bench (nccl-tests): algbw = bytes / time,
busbw = algbw * 2(n-1)/n. See bench/README.md.
"""

import argparse
import os
import socket
import sys
import time
from datetime import timedelta

MIB = 1 << 20
AUTO_ITER_BUDGET = 256 * MIB  # as allreduce_bench --auto-iters on
MIN_AUTO_ITERS = 5


def parse_bytes(text):
    t = text.strip().upper()
    for suffix in ("IB", "B"):
        if t.endswith(suffix) and len(t) > len(suffix):
            t = t[: -len(suffix)]
            break
    scale = 1
    if t and t[-1] in "KMG":
        scale = {"K": 1024, "M": MIB, "G": 1024 * MIB}[t[-1]]
        t = t[:-1]
    value = int(t) * scale
    if value <= 0:
        raise argparse.ArgumentTypeError("size must be positive: " + text)
    return value


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rank", type=int, default=int(os.environ.get("RANK", -1)))
    p.add_argument("--size", type=int,
                   default=int(os.environ.get("WORLD_SIZE", os.environ.get("SIZE", -1))))
    p.add_argument("--init", required=True,
                   help="init_method: file:///path (a fresh file) or tcp://127.0.0.1:PORT")
    p.add_argument("--sizes", default="4,64K,1M,16M,64M",
                   type=lambda s: [parse_bytes(x) for x in s.split(",")])
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--auto-iters", choices=("on", "off"), default="on")
    p.add_argument("--check", action="store_true")
    a = p.parse_args()
    if a.rank < 0 or a.size < 1 or a.rank >= a.size:
        p.error("need --rank/--size (or RANK/WORLD_SIZE)")

    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=a.init, rank=a.rank, world_size=a.size,
                            timeout=timedelta(seconds=120))
    n = a.size
    bus_factor = 2.0 * (n - 1) / n if n > 1 else 0.0
    if a.rank == 0:
        load = open("/proc/loadavg").read().strip()
        print("# torch.distributed allreduce benchmark (torch %s, backend %s)"
              % (torch.__version__, dist.get_backend()))
        print("# command: %s" % " ".join([sys.executable] + sys.argv))
        print("# ranks: %d, rank 0 on %s, %d hardware threads there, torch threads %d"
              % (n, socket.gethostname(), os.cpu_count(), torch.get_num_threads()))
        print("# load average on rank 0's host (1, 5, 15 min, ...): %s" % load)
        print("# dtype float32, op sum, warmup %d, iters %d, auto-iters %s, check %s"
              % (a.warmup, a.iters, a.auto_iters, "on" if a.check else "off"))
        print("# time: max over ranks of the per-rank average; each iteration after "
              "dist.barrier()")
        print("# %10s %11s %8s %7s %5s  %9s %7s %7s %6s"
              % ("size", "count", "type", "redop", "iters", "time", "algbw", "busbw", "#wrong"))
        print("# %10s %11s %8s %7s %5s  %9s %7s %7s %6s"
              % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", ""))
        sys.stdout.flush()

    wrong_total = 0
    for requested in a.sizes:
        count = max(1, requested // 4)
        nbytes = count * 4
        iters, warmup = a.iters, a.warmup
        if a.auto_iters == "on":
            budget = max(MIN_AUTO_ITERS, AUTO_ITER_BUDGET // nbytes)
            if budget < iters:
                iters, warmup = budget, min(warmup, 2)
        pattern = (torch.arange(count, dtype=torch.int64) % 5).to(torch.float32)
        buf = pattern + float(a.rank + 1)
        wrong_text = "N/A"
        if a.check:
            dist.all_reduce(buf, op=dist.ReduceOp.SUM)
            want = pattern * n + n * (n + 1) / 2.0
            wrong = torch.tensor([float((buf != want).sum().item())], dtype=torch.float64)
            dist.all_reduce(wrong, op=dist.ReduceOp.SUM)
            wrong_total += int(wrong.item())
            wrong_text = str(int(wrong.item()))
            buf = pattern + float(a.rank + 1)
        total = 0.0
        for it in range(warmup + iters):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(buf, op=dist.ReduceOp.SUM)
            stop = time.perf_counter()
            if it >= warmup:
                total += stop - start
        seconds = torch.tensor([total / iters], dtype=torch.float64)
        dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
        seconds = seconds.item()
        if a.rank == 0:
            algbw = nbytes / seconds / 1e9
            print("  %10d %11d %8s %7s %5d  %9.2f %7.3f %7.3f %6s"
                  % (nbytes, count, "float32", "sum", iters, seconds * 1e6, algbw,
                     algbw * bus_factor, wrong_text))
            sys.stdout.flush()
    if a.rank == 0 and a.check:
        print("# Out of bounds values : %d %s" % (wrong_total, "FAILED" if wrong_total else "OK"))
    dist.barrier()
    dist.destroy_process_group()
    return 1 if wrong_total else 0


if __name__ == "__main__":
    sys.exit(main())
