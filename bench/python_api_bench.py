"""python_api_bench: what the Horovod API costs from Python (horovodcpp.torch),
the path torch users take. Run under hvdrun (bench/python_path_bench.sh runs
it beside the C++ path and torch gloo, launch after launch):

    hvdrun -np 2 python3 bench/python_api_bench.py [--iters 20000] [--bursts 50]

Times, each as the largest over ranks of each rank's average, back to back
(no barrier between calls, as a training loop issues them):
  allreduce_   hvd.allreduce_ of a 1-element float32 tensor, in place
  allreduce    hvd.allreduce of it (a new tensor; no autograd needed)
  burst        161 tensors (as many as ResNet-50 has gradients) of --burst-elements
               each (default 1: the per-tensor cost; `resnet50`: the real sizes,
               25.6 M floats, where moving the data dominates):
               hvd.allreduce_async_ of each, then synchronize of each
Prints one line: `python_api ranks=N allreduce_us=.. allreduce_out_us=.. burst_ms=..`.
`--elements` prints the burst's tensor sizes (for fusion_bench --elements-list).
"""
import argparse
import time

import torch

import horovodcpp.torch as hvd

# The element counts of ResNet-50's 161 parameters (torchvision), in order.
RESNET50 = ([9408, 64, 64] + [4096, 64, 64, 36864, 64, 64, 16384, 256, 256, 16384, 256, 256] +
            [16384, 64, 64, 36864, 64, 64, 16384, 256, 256] * 2 +
            [32768, 128, 128, 147456, 128, 128, 65536, 512, 512, 131072, 512, 512] +
            [65536, 128, 128, 147456, 128, 128, 65536, 512, 512] * 3 +
            [131072, 256, 256, 589824, 256, 256, 262144, 1024, 1024, 524288, 1024, 1024] +
            [262144, 256, 256, 589824, 256, 256, 262144, 1024, 1024] * 5 +
            [524288, 512, 512, 2359296, 512, 512, 1048576, 2048, 2048, 2097152, 2048, 2048] +
            [1048576, 512, 512, 2359296, 512, 512, 1048576, 2048, 2048] * 2 +
            [2048000, 1000])


def slowest(seconds):
    t = torch.tensor([seconds], dtype=torch.float64)
    hvd.allreduce_(t, op=hvd.Max, name="bench.slowest")
    return t.item()


def per_call(call, iters):
    for _ in range(min(iters, 500)):
        call()
    hvd.barrier()
    start = time.perf_counter()
    for _ in range(iters):
        call()
    return slowest((time.perf_counter() - start) / iters)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iters", type=int, default=20000)
    p.add_argument("--bursts", type=int, default=50)
    p.add_argument("--elements", action="store_true")
    p.add_argument("--burst-elements", default="1")
    args = p.parse_args()
    assert len(RESNET50) == 161 and sum(RESNET50) == 25557032
    sizes = RESNET50 if args.burst_elements == "resnet50" else \
        [int(args.burst_elements)] * len(RESNET50)
    if args.elements:
        print(",".join(str(n) for n in sizes))
        return
    hvd.init()
    one = torch.ones(1)
    in_place = per_call(lambda: hvd.allreduce_(one, name="one", op=hvd.Sum), args.iters)
    out_of_place = per_call(lambda: hvd.allreduce(one, name="one", op=hvd.Sum), args.iters)
    grads = [torch.ones(n) for n in sizes]
    names = ["grad.{}".format(i) for i in range(len(grads))]

    def burst():
        handles = [hvd.allreduce_async_(g, name=n) for g, n in zip(grads, names)]
        for h in handles:
            hvd.synchronize(h)
    burst_seconds = per_call(burst, args.bursts)
    if hvd.rank() == 0:
        print("python_api ranks={} allreduce_us={:.2f} allreduce_out_us={:.2f} burst_ms={:.3f}"
              .format(hvd.size(), in_place * 1e6, out_of_place * 1e6, burst_seconds * 1e3),
              flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
