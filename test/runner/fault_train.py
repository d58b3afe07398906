"""A horovodcpp.torch training loop for fault_tests.sh: a small model,
DistributedOptimizer, one step every 10 ms until it is stopped from outside.

Every rank prints "fault_train rank R pid P" once, rank 0 "fault_train step
I" every 10 steps. A collective error ends the script with its traceback, as
it would a user's.
"""
import itertools
import os
import time

import torch
import torch.nn.functional as F

import horovodcpp.torch as hvd


def main():
    hvd.init()
    print(f"fault_train rank {hvd.rank()} pid {os.getpid()}", flush=True)
    torch.manual_seed(hvd.rank())
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                                         named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    for step in itertools.count():
        if hvd.rank() == 0 and step % 10 == 0:
            print(f"fault_train step {step}", flush=True)
        x = torch.randn(16, 32)
        y = torch.randint(0, 4, (16,))
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        time.sleep(0.01)


if __name__ == "__main__":
    main()
