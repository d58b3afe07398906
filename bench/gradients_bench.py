"""gradients_bench: a model's gradients allreduced at once, through
horovodcpp (allreduce_async_, in place, then synchronize: what
DistributedOptimizer does) and through torch.distributed on gloo
(all_reduce(async_op=True), then wait: what DDP does with its buckets), in
one job, taking turns. The communication alone, without the model.

    hvdrun -np 2 PYTHON bench/gradients_bench.py
    BENCH=bench/gradients_bench.py bench/compression_bench.sh HVDRUN 10gbit
    (on two hosts joined by a rate-limited link, then on one host)

The default sizes are bench/compiled_bench.py's MLP's: six weights of
1024 x 1024 + 1024 floats (a layer and its bias) and the last layer. A
figure is the median over --iters of the slowest rank's time.
"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist

import horovodcpp.torch as hvd
from compiled_bench import slowest, start_job


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="10250" + ",1049600" * 6,
                   help="floats per tensor, comma-separated")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--threads", type=int, default=None, help="torch threads per rank")
    p.add_argument("--iface", default=None, help="gloo's network interface (two hosts)")
    p.add_argument("--tag", default=None, help="ignored: marks the job's processes")
    return p.parse_args()


def main():
    args = parse_args()
    start_job(args)
    sizes = [int(s) for s in args.sizes.split(",")]
    ours = [torch.ones(n) for n in sizes]
    theirs = [torch.ones(n) for n in sizes]

    def horovodcpp_step():
        handles = [hvd.allreduce_async_(t, name="gradient.%d" % i) for i, t in enumerate(ours)]
        for h in handles:
            hvd.synchronize(h)

    def gloo_step():
        for w in [dist.all_reduce(t, async_op=True) for t in theirs]:
            w.wait()

    times = {"horovodcpp": [], "torch.distributed gloo": []}
    for it in range(args.iters + 2):  # two warm-up iterations
        for name, step in (("horovodcpp", horovodcpp_step), ("torch.distributed gloo", gloo_step)):
            hvd.barrier()
            start = time.perf_counter()
            step()
            took = slowest(time.perf_counter() - start)
            if it >= 2:
                times[name].append(took * 1e3)
    if hvd.rank() == 0:
        megabytes = sum(sizes) * 4 / 1e6
        print("%d tensors, %.1f MB, %d ranks" % (len(sizes), megabytes, hvd.size()))
        print("| allreduce | median | min | max | gloo / this |")
        print("|---|---|---|---|---|")
        gloo = statistics.median(times["torch.distributed gloo"])
        for name, values in times.items():
            median = statistics.median(values)
            print("| %s | %.1f ms | %.1f | %.1f | %.2f |"
                  % (name, median, min(values), max(values), gloo / median))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
