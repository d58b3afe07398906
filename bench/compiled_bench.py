"""compiled_bench: a torch.compile'd model's training step with horovodcpp's
DistributedOptimizer next to the same compiled model under DDP on the gloo
backend, in one job, taking turns.

    hvdrun -np 2 PYTHON bench/compiled_bench.py [--backend inductor]
    BENCH=bench/compiled_bench.py PYTHON=... bench/compression_bench.sh HVDRUN 100mbit
    (on two hosts joined by a rate-limited link, then on one host)

PYTHON has PyTorch 2.4 or newer (scripts/setup.sh --tests puts one in
~/.cache/horovodcpp/torch-venv). Three ways to train the same MLP:
  horovodcpp overlapped  torch.compile(model, backend=hvd.compile_backend(...))
                         with hvd.DistributedOptimizer: the graph split at
                         bucket boundaries, each bucket's allreduce started
                         while the earlier layers' backward runs
  horovodcpp plain       torch.compile(model) with hvd.DistributedOptimizer:
                         every allreduce after the whole compiled backward
  DDP gloo               torch.compile(DDP(model)) on a gloo process group
                         (torch's DDPOptimizer splits its graph the same way)
Each round times --steps steps of each, one after the other; a figure is the
median over rounds of the slowest rank's mean step. A second table splits
the step into phases (each the median over the timed steps, the slowest
rank's): forward (zero_grad and the model), backward (DDP's waits for its
last bucket in it), synchronize (horovodcpp's wait for its allreduces) and
the optimizer's step.
"""
import argparse
import datetime
import os
import statistics
import time

import torch
import torch.distributed as dist

import horovodcpp.torch as hvd
import horovodcpp.torch.distributed  # noqa: F401  (RANK, MASTER_ADDR, ... under hvdrun)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--batch", type=int, default=64, help="per rank")
    p.add_argument("--steps", type=int, default=5, help="timed steps per round")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--bucket-cap-mb", type=float, default=4.0)
    p.add_argument("--backend", default="inductor", help="torch.compile backend inside")
    p.add_argument("--threads", type=int, default=None, help="torch threads per rank")
    p.add_argument("--iface", default=None, help="gloo's network interface (two hosts)")
    p.add_argument("--tag", default=None, help="ignored: marks the job's processes")
    return p.parse_args()


def make_model(args):
    torch.manual_seed(0)
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(args.width, 10))


class PhaseClock:
    """One trainer's phase times, step by step (seconds)."""
    NAMES = ("forward", "backward", "synchronize", "optimizer")

    def __init__(self):
        self.steps = []

    def start(self):
        self.steps.append([])
        self._last = time.perf_counter()

    def lap(self):
        now = time.perf_counter()
        self.steps[-1].append(now - self._last)
        self._last = now

    def medians(self):
        return [statistics.median(step[i] for step in self.steps) for i in range(len(self.NAMES))]


def slowest(seconds):
    t = torch.tensor([seconds], dtype=torch.float64)
    hvd.allreduce_(t, op=hvd.Max, name="bench.slowest")
    return t.item()


def trainers(args, gloo):
    """name -> (step(), its PhaseClock); each compiled and warmed up."""
    x = torch.randn(args.batch, args.width, generator=torch.Generator().manual_seed(hvd.rank()))
    y = torch.randint(0, 10, (args.batch,), generator=torch.Generator().manual_seed(1))
    made = {}

    def horovodcpp_trainer(backend):
        model = make_model(args)
        compiled = torch.compile(model, backend=backend)
        optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                                             named_parameters=model.named_parameters())

        clock = PhaseClock()

        def step():
            clock.start()
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(compiled(x), y)
            clock.lap()
            loss.backward()
            clock.lap()
            optimizer.synchronize()
            clock.lap()
            with optimizer.skip_synchronize():
                optimizer.step()
            clock.lap()
        return step, clock

    made["horovodcpp overlapped"] = horovodcpp_trainer(
        hvd.compile_backend(backend=args.backend, bucket_cap_mb=args.bucket_cap_mb))
    made["horovodcpp plain"] = horovodcpp_trainer(args.backend)
    ddp = torch.nn.parallel.DistributedDataParallel(make_model(args), process_group=gloo,
                                                    bucket_cap_mb=args.bucket_cap_mb)
    compiled_ddp = torch.compile(ddp, backend=args.backend)
    ddp_optimizer = torch.optim.SGD(ddp.parameters(), lr=0.01)

    ddp_clock = PhaseClock()

    def ddp_step():
        ddp_clock.start()
        ddp_optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(compiled_ddp(x), y)
        ddp_clock.lap()
        loss.backward()
        ddp_clock.lap()
        ddp_clock.lap()  # nothing to synchronize: backward waited
        ddp_optimizer.step()
        ddp_clock.lap()
    made["DDP gloo"] = (ddp_step, ddp_clock)
    for step, clock in made.values():  # compiles
        for _ in range(2):
            step()
        clock.steps.clear()
    return made


def start_job(args):
    """horovodcpp and a gloo process group, on --iface with --threads."""
    if args.iface:
        os.environ["GLOO_SOCKET_IFNAME"] = args.iface
    if args.threads:
        torch.set_num_threads(args.threads)
    hvd.init()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=600))


def main():
    args = parse_args()
    start_job(args)
    runs = trainers(args, dist.group.WORLD)
    times = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, (step, _) in runs.items():
            hvd.barrier()
            start = time.perf_counter()
            for _ in range(args.steps):
                step()
            times[name].append(slowest((time.perf_counter() - start) / args.steps))
    phases = {name: [slowest(m) for m in clock.medians()] for name, (_, clock) in runs.items()}
    if hvd.rank() == 0:
        params = sum(p.numel() for p in make_model(args).parameters())
        print("# compiled_bench: torch {}, {} ranks, MLP {} x {} ({:.1f} M parameters), batch {} "
              "per rank, backend {}, buckets {} MB, {} rounds of {} steps".format(
                  torch.__version__, hvd.size(), args.layers, args.width, params / 1e6,
                  args.batch, args.backend, args.bucket_cap_mb, args.rounds, args.steps))
        ddp = statistics.median(times["DDP gloo"])
        print("| training | step (median of rounds) | DDP gloo / this |")
        print("|---|---|---|")
        for name, values in times.items():
            median = statistics.median(values)
            print("| {} | {:.1f} ms | {:.2f} |".format(name, median * 1e3, ddp / median))
        print()
        print("| training | " + " | ".join(PhaseClock.NAMES) + " |")
        print("|---" * (len(PhaseClock.NAMES) + 1) + "|")
        for name, medians in phases.items():
            print("| {} | ".format(name) + " | ".join("{:.1f} ms".format(m * 1e3)
                                                     for m in medians) + " |")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
