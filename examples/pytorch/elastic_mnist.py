#!/usr/bin/python3
"""Elastic data-parallel training of examples/pytorch/mnist.py's CNN on
Fashion-MNIST: the job survives ranks that die and grows when hosts come.

    hvdrun -np 4 --min-np 2 --max-np 4 /usr/bin/python3 examples/pytorch/elastic_mnist.py
    hvdrun -np 4 --min-np 2 --host-discovery-script ./hosts.sh python3 elastic_mnist.py

The training function runs under hvd.elastic.run with its progress in a
TorchState (model, optimizer, the ElasticSampler, the epoch): committed every
--batches-per-commit batches. When a rank dies, the others roll back to the
last commit, re-form the job without it, and go on; when hvdrun adds ranks,
every rank stops at the next commit, and the new ones receive the state.
After each change the learning rate is rescaled with the new size() and the
sampler shares what is left of the epoch among the ranks now there.
"""
import argparse
import time

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Subset

import horovodcpp.torch as hvd
from mnist import Net, load, test_accuracy


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist",
                        help="directory with the IDX .gz files (Debian: dataset-fashion-mnist)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--train-images", type=int, default=None,
                        help="train on the first N images only")
    parser.add_argument("--batch-size", type=int, default=64, help="per rank")
    parser.add_argument("--lr", type=float, default=0.01,
                        help="per-rank learning rate (multiplied by the number of ranks)")
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--batches-per-commit", type=int, default=10,
                        help="how many batches a failure may cost")
    parser.add_argument("--log-interval", type=int, default=100, help="batches")
    parser.add_argument("--seed", type=int, default=42)
    return parser.parse_args()


def main():
    args = parse_args()
    hvd.init()
    torch.manual_seed(args.seed)
    train_set, test_set = load(args.data_dir, "train"), load(args.data_dir, "t10k")
    if args.train_images:
        train_set = Subset(train_set, range(args.train_images))
    sampler = hvd.elastic.ElasticSampler(train_set, shuffle=True, seed=args.seed)
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)

    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * hvd.size(),
                                momentum=args.momentum)
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())

    # No collective before train(): a rank that joins later starts there too.
    state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, epoch=0)

    def on_reset():
        for group in optimizer.param_groups:
            group["lr"] = args.lr * hvd.size()
        if hvd.rank() == 0:
            print("reset: now {} ranks".format(hvd.size()), flush=True)

    state.register_reset_callbacks([on_reset])

    @hvd.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, args.epochs):
            started, batches = time.time(), 0
            for batch, (x, y) in enumerate(loader):
                optimizer.zero_grad()
                output = model(x)
                loss = F.cross_entropy(output, y)
                loss.backward()
                optimizer.step()
                state.sampler.record_batch(batch, args.batch_size)
                batches += 1
                if (batch + 1) % args.batches_per_commit == 0:
                    state.commit()
                if (batch + 1) % args.log_interval == 0 and hvd.rank() == 0:
                    speed = batches * args.batch_size * hvd.size() / (time.time() - started)
                    print("Epoch[{}] Batch [{}] {} ranks, {:.0f} samples/sec loss={:.4f}".format(
                        state.epoch, batch + 1, hvd.size(), speed, loss.item()), flush=True)
            accuracy = test_accuracy(model, test_set)
            if hvd.rank() == 0:
                print("Epoch[{}] test accuracy={:.4f}".format(state.epoch, accuracy), flush=True)
            # The next epoch starts from an unprocessed sampler (set at the
            # end, so that a reset mid-epoch keeps what was done).
            state.sampler.set_epoch(state.epoch + 1)
            state.epoch += 1  # what a reset from here on resumes
            state.commit()

    train(state)

    # Every rank applied the same updates: the parameters must be identical.
    for name, p in model.state_dict().items():
        root = hvd.broadcast(p, root_rank=0, name="check." + name)
        same = hvd.allreduce(torch.tensor(int(torch.equal(root, p))), op=hvd.Min,
                             name="same." + name)
        if not same:
            raise SystemExit("parameter {} differs across ranks".format(name))
    if hvd.rank() == 0:
        print("parameters identical on all {} ranks".format(hvd.size()))
    hvd.shutdown()


if __name__ == "__main__":
    main()
