#!/usr/bin/python3
"""An elastic PyTorch training job for elastic_tests.sh: a small model
trained with hvd.elastic.run, a commit after every step. Every rank prints
one line per step ("step S size N rank R worker W time T"); --kill-worker W
--kill-step S makes worker W SIGKILL itself in the middle of step S (its
gradients submitted, the update not yet applied). Training ends after
--steps steps, of which the last --final-steps ran on --final-size ranks
(so a job that has to grow waits for it). At the end, every rank checks its
parameters against rank 0's and prints "parameters identical on all N
ranks (sum X)". With --sharding S (ZeRO stage S), every rank also prints the
whole optimizer state's sum at each commit ("committing step S state sum
X") and when training (re)starts ("state at step S size N sum X shard E":
E elements of it are this rank's)."""
import argparse
import os
import signal
import time

import torch

import horovodcpp.torch as hvd

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=20)
parser.add_argument("--final-size", type=int, default=1)
parser.add_argument("--final-steps", type=int, default=0)
parser.add_argument("--kill-worker", type=int, default=-1)
parser.add_argument("--kill-step", type=int, default=-1)
parser.add_argument("--step-seconds", type=float, default=0.05)
parser.add_argument("--sharding", type=int, default=0)
parser.add_argument("--tag", default="", help="ignored: lets the test find its processes")
args = parser.parse_args()
WORKER = int(os.environ["HOROVODCPP_ELASTIC_WORKER"])

hvd.init()
torch.manual_seed(1234 + WORKER)  # different on purpose: sync() must make them equal
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9),
                                     named_parameters=model.named_parameters(),
                                     sharding=args.sharding)
state = hvd.elastic.TorchState(model, optimizer, step=0, steps_at_final_size=0)
state.register_reset_callbacks(
    [lambda: print("reset: size {} rank {} worker {}".format(hvd.size(), hvd.rank(), WORKER),
                   flush=True)])


def state_sum():
    """The sum of the whole optimizer state (gathered from every rank's
    shards: a collective) and how many of its elements this rank holds."""
    whole = optimizer.consolidate_state_dict(to=None)
    local = optimizer.state_dict()["state"]
    return (sum(float(v.double().sum()) for values in whole["state"].values()
                for v in values.values() if torch.is_tensor(v)),
            sum(v.numel() for values in local.values() for v in values.values()
                if torch.is_tensor(v) and v.dim() > 0))


def batch(step, rank):
    g = torch.Generator().manual_seed(step * 1000 + rank)
    x = torch.randn(8, 16, generator=g)
    return x, (x[:, :4] * 2).sum(1, keepdim=True).expand(8, 4)


@hvd.elastic.run
def train(state):
    print("train from step {} size {} rank {} worker {} host {} netns {}".format(
        state.step, hvd.size(), hvd.rank(), WORKER, os.environ.get("HOROVOD_HOSTNAME"),
        os.readlink("/proc/self/ns/net")), flush=True)
    if args.sharding:
        print("state at step {} size {} sum {:.9f} shard {}".format(
            state.step, hvd.size(), *state_sum()), flush=True)
    while state.step < args.steps or state.steps_at_final_size < args.final_steps:
        x, y = batch(state.step, hvd.rank())
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        if WORKER == args.kill_worker and state.step == args.kill_step:
            print("killing worker {} at step {} time {:.3f}".format(WORKER, state.step,
                                                                     time.time()), flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        optimizer.step()
        state.step += 1
        if hvd.size() == args.final_size:
            state.steps_at_final_size += 1
        if args.sharding:  # what the commit saves (it may be interrupted by new hosts)
            print("committing step {} state sum {:.9f}".format(state.step, state_sum()[0]),
                  flush=True)
        state.commit()
        print("step {} size {} rank {} worker {} time {:.3f}".format(
            state.step, hvd.size(), hvd.rank(), WORKER, time.time()), flush=True)
        time.sleep(args.step_seconds)


train(state)
total = 0.0
for name, p in sorted(model.state_dict().items()):
    root = hvd.broadcast(p, root_rank=0, name="check." + name)
    same = hvd.allreduce(torch.tensor(int(torch.equal(root, p))), op=hvd.Min, name="same." + name)
    if not int(same):
        raise SystemExit("parameter {} differs across ranks".format(name))
    total += float(p.double().sum())
print("parameters identical on all {} ranks (sum {:.6f}) after step {}".format(
    hvd.size(), total, state.step), flush=True)
hvd.shutdown()
