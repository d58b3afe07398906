#!/usr/bin/python3
"""The training step of a data-parallel MLP with each gradient compressor,
side by side in one job: median step time, its ratio to uncompressed, and
the bytes sent per step on --iface (one host's interface), where given.

    hvdrun -np 2 python3 bench/compression_bench.py [--iface hvdt0]

bench/compression_bench.sh runs it across a rate-limited link between two
network namespaces and on one host."""
import argparse
import os
import statistics
import time

import torch

import horovodcpp.torch as hvd


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--width", type=int, default=2048, help="hidden layer width")
    parser.add_argument("--batch", type=int, default=32, help="per rank")
    parser.add_argument("--steps", type=int, default=12, help="timed steps per compressor")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iface", default=None, help="count the bytes sent on this interface")
    parser.add_argument("--twobit-threshold", type=float, default=0.05)
    parser.add_argument("--powersgd-rank", type=int, default=4)
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads per rank (default: cores / ranks on this host)")
    parser.add_argument("--tag", default=None, help="ignored: marks the job's processes")
    return parser.parse_args()


def sent_bytes(iface):
    if not iface:
        return 0
    with open("/sys/class/net/{}/statistics/tx_bytes".format(iface)) as f:
        return int(f.read())


def make_model(width):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(784, width), torch.nn.ReLU(),
                               torch.nn.Linear(width, width), torch.nn.ReLU(),
                               torch.nn.Linear(width, 10))


def run(args, compression):
    """(median step seconds, bytes sent per rank per step); compression None:
    local training without any communication."""
    model = make_model(args.width)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    if compression is not None:
        optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                             compression=compression)
    x = torch.randn(args.batch, 784, generator=torch.Generator().manual_seed(hvd.rank()))
    y = torch.randint(0, 10, (args.batch,), generator=torch.Generator().manual_seed(1))
    times = []
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            hvd.barrier()
            before = sent_bytes(args.iface)
        started = time.perf_counter()
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        times.append(time.perf_counter() - started)
    sent = (sent_bytes(args.iface) - before) / args.steps
    step_times = hvd.allgather(torch.tensor([statistics.median(times[args.warmup:])]),
                               name="bench.time")
    return float(step_times.max()), sent


def main():
    args = parse_args()
    hvd.init()
    torch.set_num_threads(args.threads or max(1, (os.cpu_count() or 1) // hvd.local_size()))
    compressors = [
        ("no communication", lambda: None),
        ("none", lambda: hvd.Compression.none),
        ("fp16", lambda: hvd.Compression.fp16),
        ("bf16", lambda: hvd.Compression.bf16),
        ("twobit t={}".format(args.twobit_threshold),
         lambda: hvd.Compression.twobit(args.twobit_threshold)),
        ("powersgd r={}".format(args.powersgd_rank),
         lambda: hvd.Compression.powersgd(args.powersgd_rank, start_powerSGD_iter=0)),
    ]
    params = sum(p.numel() for p in make_model(args.width).parameters())
    results = [(name, run(args, make())) for name, make in compressors]
    if hvd.rank() == 0:
        print("{} ranks, MLP 784-{w}-{w}-10 ({:.1f} M parameters, {:.1f} MB float32 gradients), "
              "batch {} per rank, median of {} steps (slowest rank)".format(
                  hvd.size(), params / 1e6, params * 4 / 1e6, args.batch, args.steps,
                  w=args.width))
        baseline = dict(results)["none"][0]
        print("{:<18} {:>10} {:>14} {:>16}".format("compression", "step ms", "speed vs none",
                                                   "MB sent/host/step" if args.iface else ""))
        for name, (seconds, sent) in results:
            print("{:<18} {:>10.1f} {:>13.2f}x {:>16}".format(
                name, seconds * 1e3, baseline / seconds,
                "{:.2f}".format(sent / 1e6) if args.iface else ""))
    hvd.shutdown()


if __name__ == "__main__":
    main()
