#!/usr/bin/python3
"""Data-parallel training of a small CNN on Fashion-MNIST with
horovodcpp.torch (the API of horovod.torch):

    hvdrun -np 2 /usr/bin/python3 examples/pytorch/mnist.py

Each rank trains on its shard of every (identically shuffled) epoch;
DistributedOptimizer averages the gradients, so every rank applies the same
update. The learning rate is the per-rank rate times the number of ranks,
reached by a linear warm-up over the first epoch (Goyal et al., as in
Horovod's examples). Rank 0 prints the loss and accuracy averaged over all
ranks, the test accuracy after each epoch, and writes a checkpoint per
epoch; a rerun with the same --checkpoint-dir resumes from the last one.
--compression picks the gradient compressor (docs/compression.md).
"""
import argparse
import gzip
import os
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Subset, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import horovodcpp.torch as hvd

# Fashion-MNIST's pixel mean and standard deviation (on [0, 1]).
MEAN, STD = 0.2860, 0.3530


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
    parser.add_argument("--warmup-epochs", type=float, default=1.0)
    parser.add_argument("--compression", default="none",
                        choices=["none", "fp16", "bf16", "twobit", "powersgd"],
                        help="gradient compression (docs/compression.md)")
    parser.add_argument("--twobit-threshold", type=float, default=0.5)
    parser.add_argument("--powersgd-rank", type=int, default=1)
    parser.add_argument("--powersgd-start-iter", type=int, default=10,
                        help="steps sent uncompressed before PowerSGD starts")
    parser.add_argument("--fp16-allreduce", action="store_true",
                        help="send gradients as float16")
    parser.add_argument("--checkpoint-dir", default=None,
                        help="rank 0 writes checkpoint-<epoch>.pt here; training resumes "
                             "from the last one")
    parser.add_argument("--log-interval", type=int, default=100, help="batches")
    parser.add_argument("--seed", type=int, default=42)
    return parser.parse_args()


def read_idx(path):
    """An IDX file (gzip'ed): uint8 images [n, rows, cols] or labels [n]."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, count = np.frombuffer(data, ">u4", 2)
    if magic == 2051:
        rows, cols = np.frombuffer(data, ">u4", 2, offset=8)
        return np.frombuffer(data, np.uint8, offset=16).reshape(count, rows, cols)
    if magic == 2049:
        return np.frombuffer(data, np.uint8, offset=8)
    raise ValueError("{}: not an IDX image or label file".format(path))


def load(data_dir, split):
    prefix = os.path.join(data_dir, split)
    try:
        images = read_idx(prefix + "-images-idx3-ubyte.gz")
        labels = read_idx(prefix + "-labels-idx1-ubyte.gz")
    except FileNotFoundError as e:
        raise SystemExit("{}\ninstall Debian's dataset-fashion-mnist or pass --data-dir".format(e))
    x = (torch.from_numpy(images.copy()).float().div_(255) - MEAN) / STD
    return TensorDataset(x.unsqueeze(1), torch.from_numpy(labels.astype(np.int64)))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 16, 5)   # 28 -> 24, pooled to 12
        self.conv2 = torch.nn.Conv2d(16, 32, 5)  # 12 -> 8, pooled to 4
        self.fc1 = torch.nn.Linear(32 * 4 * 4, 64)
        self.fc2 = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def last_checkpoint(directory):
    """(epoch, path) of the newest checkpoint-<epoch>.pt, or (0, None)."""
    epochs = [int(name[len("checkpoint-"):-len(".pt")]) for name in os.listdir(directory)
              if name.startswith("checkpoint-") and name.endswith(".pt")]
    if not epochs:
        return 0, None
    return max(epochs), os.path.join(directory, "checkpoint-{}.pt".format(max(epochs)))


def test_accuracy(model, dataset):
    """Accuracy on the whole test set: each rank scores every size-th
    image, and the counts are summed over ranks."""
    model.eval()
    x, y = dataset.tensors
    correct = torch.zeros(2, dtype=torch.int64)
    with torch.no_grad():
        for start in range(hvd.rank() * 1000, len(y), hvd.size() * 1000):
            predicted = model(x[start:start + 1000]).argmax(1)
            correct += torch.tensor([int((predicted == y[start:start + 1000]).sum()),
                                     len(predicted)])
    correct = hvd.allreduce(correct, op=hvd.Sum, name="test_accuracy")
    model.train()
    return float(correct[0]) / float(correct[1])


def main():
    args = parse_args()
    hvd.init()
    # Ranks share the host's cores: one slice each instead of all of them.
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // hvd.local_size()))
    torch.manual_seed(args.seed)

    train_set, test_set = load(args.data_dir, "train"), load(args.data_dir, "t10k")
    if args.train_images:
        train_set = Subset(train_set, range(args.train_images))
    sampler = DistributedSampler(train_set, num_replicas=hvd.size(), rank=hvd.rank(),
                                 shuffle=True, seed=args.seed)
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)

    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * hvd.size(),
                                momentum=args.momentum)

    # Resume: rank 0 reads the checkpoint, the broadcasts below share it.
    start_epoch = 0
    if args.checkpoint_dir and hvd.rank() == 0:
        os.makedirs(args.checkpoint_dir, exist_ok=True)
        start_epoch, path = last_checkpoint(args.checkpoint_dir)
        if path:
            state = torch.load(path)
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            print("resuming from {} (epoch {})".format(path, start_epoch), flush=True)
    start_epoch = hvd.broadcast_object(start_epoch, root_rank=0, name="start_epoch")
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

    compression = {
        "none": lambda: hvd.Compression.none, "fp16": lambda: hvd.Compression.fp16,
        "bf16": lambda: hvd.Compression.bf16,
        "twobit": lambda: hvd.Compression.twobit(args.twobit_threshold),
        "powersgd": lambda: hvd.Compression.powersgd(args.powersgd_rank,
                                                     args.powersgd_start_iter),
    }["fp16" if args.fp16_allreduce else args.compression]()
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                         compression=compression)

    batches = len(loader)
    for epoch in range(start_epoch, args.epochs):
        sampler.set_epoch(epoch)
        seen, started = 0, time.time()
        for batch, (x, y) in enumerate(loader):
            progress = (epoch * batches + batch) / max(1.0, args.warmup_epochs * batches)
            for group in optimizer.param_groups:
                group["lr"] = args.lr * (1 + (hvd.size() - 1) * min(1.0, progress))
            optimizer.zero_grad()
            output = model(x)
            loss = F.cross_entropy(output, y)
            loss.backward()
            optimizer.step()
            seen += len(y)
            if (batch + 1) % args.log_interval == 0 or batch + 1 == batches:
                metrics = torch.tensor([loss.item(), (output.argmax(1) == y).float().mean()])
                loss_avg, accuracy = hvd.allreduce(metrics, name="train_metrics").tolist()
                if hvd.rank() == 0:
                    speed = seen * hvd.size() / (time.time() - started)
                    print("Epoch[{}] Batch [{}] Speed: {:.0f} samples/sec loss={:.4f} "
                          "accuracy={:.4f}".format(epoch, batch + 1, speed, loss_avg, accuracy),
                          flush=True)
        accuracy = test_accuracy(model, test_set)
        if hvd.rank() == 0:
            print("Epoch[{}] test accuracy={:.4f}".format(epoch, accuracy), flush=True)
            if args.checkpoint_dir:
                path = os.path.join(args.checkpoint_dir, "checkpoint-{}.pt".format(epoch + 1))
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()},
                           path)

    # Every rank applied the same updates: the parameters must be identical.
    for name, p in model.state_dict().items():
        root = hvd.broadcast(p, root_rank=0, name="check." + name)
        same = hvd.allreduce(torch.tensor(int(torch.equal(root, p))), op=hvd.Min,
                             name="same." + name)
        if not same:
            raise SystemExit("parameter {} differs across ranks".format(name))
    accuracy = test_accuracy(model, test_set)
    if hvd.rank() == 0:
        print("test accuracy={:.4f}".format(accuracy))
        print("parameters identical on all {} ranks".format(hvd.size()))
    hvd.shutdown()


if __name__ == "__main__":
    main()
