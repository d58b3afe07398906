#!/usr/bin/python3
"""Training throughput of a torchvision model on random data with
horovodcpp.torch, like Horovod's pytorch_synthetic_benchmark.py:

    hvdrun -np 2 /usr/bin/python3 examples/pytorch/synthetic_benchmark.py

Every iteration runs --num-batches-per-iter batches (forward, backward,
DistributedOptimizer step); rank 0 prints img/sec per rank for each
iteration, then their mean +- 1.96 standard deviations and the total over
all ranks. Defaults suit a small CPU machine (resnet18, batch 8, 112 px);
Horovod's are resnet50, batch 32, 224 px.
"""
import argparse
import os
import timeit

import numpy as np
import torch
import torch.nn.functional as F
from torchvision import models

import horovodcpp.torch as hvd


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--model", default="resnet18", help="a torchvision.models name")
    parser.add_argument("--batch-size", type=int, default=8, help="per rank")
    parser.add_argument("--image-size", type=int, default=112)
    parser.add_argument("--fp16-allreduce", action="store_true",
                        help="send gradients as float16")
    parser.add_argument("--num-warmup-batches", type=int, default=2)
    parser.add_argument("--num-batches-per-iter", type=int, default=3)
    parser.add_argument("--num-iters", type=int, default=5)
    return parser.parse_args()


def main():
    args = parse_args()
    hvd.init()
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // hvd.local_size()))
    torch.manual_seed(0)

    model = getattr(models, args.model)(num_classes=1000)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size())
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         compression=compression)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    data = torch.randn(args.batch_size, 3, args.image_size, args.image_size)
    target = torch.randint(0, 1000, [args.batch_size])

    def benchmark_step():
        optimizer.zero_grad()
        F.cross_entropy(model(data), target).backward()
        optimizer.step()

    def log(text):
        if hvd.rank() == 0:
            print(text, flush=True)

    log("Model: {}".format(args.model))
    log("Batch size: {}, image size: {}".format(args.batch_size, args.image_size))
    log("Number of CPU ranks: {}".format(hvd.size()))
    timeit.timeit(benchmark_step, number=args.num_warmup_batches)
    rates = []
    for i in range(args.num_iters):
        seconds = timeit.timeit(benchmark_step, number=args.num_batches_per_iter)
        rate = args.batch_size * args.num_batches_per_iter / seconds
        log("Iter #{}: {:.1f} img/sec per rank".format(i, rate))
        rates.append(rate)
    mean, spread = np.mean(rates), 1.96 * np.std(rates)
    log("Img/sec per rank: {:.1f} +-{:.1f}".format(mean, spread))
    log("Total img/sec on {} rank(s): {:.1f} +-{:.1f}".format(hvd.size(), hvd.size() * mean,
                                                              hvd.size() * spread))
    hvd.shutdown()


if __name__ == "__main__":
    main()
