#!/usr/bin/python3
"""train_bench: synthetic data-parallel training throughput (img/sec),
horovodcpp.torch next to torch DistributedDataParallel on gloo.

Both sides train the same model on the same random data with the same
per-rank batch, optimizer (SGD, momentum 0.9), seeds, warm-up and timed
batches; only the way gradients are averaged differs:

  hvd  horovodcpp.torch.DistributedOptimizer + broadcast_parameters /
       broadcast_optimizer_state, launched by `hvdrun -np N` (one host: data
       through shared memory, the default)
  ddp  torch.nn.parallel.DistributedDataParallel, gloo backend, N processes
       started by this script (file:// rendezvous, RANK/WORLD_SIZE)

Driver (default; what bench/run_peers.sh calls):

    bench/train_bench.py --hvdrun build/runner/hvdrun --pythonpath build/python \\
        [--np 2] [--model resnet18] [--batch-size 16] [--repeats 2] [--out FILE]

runs one horovodcpp side per --hvd-groups entry (default: per-tensor
allreduces, and 25 MiB groups) and DDP, alternated --repeats times so that a
change of machine load hits all, keeps every worker's output, and prints
one table: img/sec per timed round and launch, the mean over all rounds,
and each horovodcpp side / DDP. Worker (one rank; the driver starts these):

    hvdrun -np 2 /usr/bin/python3 bench/train_bench.py --framework hvd --hvd-groups none
    RANK=r WORLD_SIZE=2 /usr/bin/python3 bench/train_bench.py --framework ddp --init file:///tmp/x

Each rank uses one intra-op thread (torch.set_num_threads(1)): the ranks
share the host's cores, and on a 2-core host two ranks with one thread each
fill it. A timed round is --batches-per-round training steps (zero_grad,
forward, cross entropy, backward, optimizer step) after a barrier; its time
is the largest over ranks, and its img/sec the total over ranks:
np * batch * batches / time. See bench/README.md, "train_bench.py, gpu_bench.sh,
compression_bench.sh, scale_bench.sh".
"""

import argparse
import os
import re
import shlex
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RESULT = "# result"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--framework", choices=("both", "hvd", "ddp"), default="both",
                   help="both: the driver; hvd/ddp: one rank of one side")
    p.add_argument("--model", default="resnet18",
                   help="a torchvision.models name (resnet18: 11.2M parameters in 62 "
                        "tensors), mlp (3072-2048-2048-1024-10, 12.6M in 8) or cnn (three "
                        "3x3 convolutions and two linear layers, 2.2M in 10)")
    p.add_argument("--batch-size", type=int, default=16, help="per rank")
    p.add_argument("--image-size", type=int, default=32, help="3 x S x S images")
    p.add_argument("--num-classes", type=int, default=10)
    p.add_argument("--warmup", type=int, default=5, help="untimed steps")
    p.add_argument("--batches-per-round", type=int, default=10)
    p.add_argument("--rounds", type=int, default=5, help="timed rounds per launch")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads per rank")
    p.add_argument("--fp16-allreduce", action="store_true",
                   help="hvd: Compression.fp16 (DDP: fp16_compress_hook)")
    p.add_argument("--hvd-groups", default="none,bucket:25",
                   help="hvd: how DistributedOptimizer groups gradients into allreduces: "
                        "none (one allreduce per tensor, its default), N (groups=N), or "
                        "bucket:MB (groups= lists of about MB MiB in reverse parameter order, "
                        "like DDP's 25 MiB buckets). The driver takes a comma-separated list "
                        "and runs one horovodcpp side per entry")
    # driver
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--repeats", type=int, default=2, help="hvd+ddp launch pairs")
    p.add_argument("--hvdrun", default=os.path.join(HERE, "..", "build", "runner", "hvdrun"))
    p.add_argument("--hvdrun-args", default="",
                   help="extra hvdrun options, e.g. '--gloo' (default: its own default)")
    p.add_argument("--pythonpath", default=None,
                   help="directory holding the horovodcpp package (a build's python/)")
    p.add_argument("--logs", default=None, help="keep worker outputs here (default: a temp dir)")
    p.add_argument("--out", default=None, help="also write the table here")
    p.add_argument("--timeout", type=int, default=600, help="seconds per launch")
    # ddp worker
    p.add_argument("--init", default=None, help="ddp: init_method (file:///fresh/path)")
    return p.parse_args(argv)


# --------------------------------------------------------------------------
# worker side


def build_model(name, image_size, num_classes):
    import torch.nn as nn
    if name == "mlp":
        d = 3 * image_size * image_size
        return nn.Sequential(nn.Flatten(), nn.Linear(d, 2048), nn.ReLU(), nn.Linear(2048, 2048),
                             nn.ReLU(), nn.Linear(2048, 1024), nn.ReLU(),
                             nn.Linear(1024, num_classes))
    if name == "cnn":
        s = image_size // 8
        return nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(128 * s * s, 1024), nn.ReLU(),
            nn.Linear(1024, num_classes))
    from torchvision import models
    return getattr(models, name)(num_classes=num_classes)


def hvd_groups(spec, model):
    if spec == "none":
        return None
    if spec.startswith("bucket:"):
        cap = float(spec.split(":", 1)[1]) * 2**20
        groups, size = [[]], 0
        for p in reversed([p for p in model.parameters() if p.requires_grad]):
            if groups[-1] and size + p.numel() * p.element_size() > cap:
                groups.append([])
                size = 0
            groups[-1].append(p)
            size += p.numel() * p.element_size()
        return groups
    return int(spec)


class Hvd:
    """The horovodcpp.torch side."""

    def __init__(self, a, model):
        import torch
        import horovodcpp.torch as hvd
        self.hvd = hvd
        self.rank, self.size = hvd.rank(), hvd.size()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        compression = hvd.Compression.fp16 if a.fp16_allreduce else hvd.Compression.none
        groups = hvd_groups(a.hvd_groups.split(",")[0], model)  # a worker: the first entry
        self.optimizer = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters(),
                                                  compression=compression, groups=groups)
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        hvd.broadcast_optimizer_state(self.optimizer, root_rank=0)
        self.model = model

    def barrier(self):
        self.hvd.barrier()

    def max(self, value):
        import torch
        return float(self.hvd.allreduce(torch.tensor([value], dtype=torch.float64),
                                        op=self.hvd.Max, name="train_bench.max"))

    def step(self, data, target, t):
        import torch.nn.functional as F
        t0 = time.perf_counter()
        self.optimizer.zero_grad()
        loss = F.cross_entropy(self.model(data), target)
        t1 = time.perf_counter()
        loss.backward()  # the hooks submit each gradient as it is ready
        t2 = time.perf_counter()
        self.optimizer.synchronize()  # = what step() does first
        t3 = time.perf_counter()
        with self.optimizer.skip_synchronize():
            self.optimizer.step()
        t4 = time.perf_counter()
        t[0] += t1 - t0
        t[1] += t2 - t1
        t[2] += t3 - t2
        t[3] += t4 - t3
        return loss

    def describe(self):
        from horovodcpp import __version__ as version
        keys = sorted(k for k in os.environ if k.startswith(("HOROVODCPP_", "HOROVOD_")))
        env = " ".join("%s=%s" % (k, os.environ[k]) for k in keys) or "none"
        return "horovodcpp %s; horovodcpp/horovod environment: %s" % (version, env)

    def finish(self):
        self.hvd.shutdown()


class Ddp:
    """The torch DistributedDataParallel (gloo) side."""

    def __init__(self, a, model):
        from datetime import timedelta
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel
        self.dist = dist
        rank = int(os.environ["RANK"])
        size = int(os.environ["WORLD_SIZE"])
        dist.init_process_group("gloo", init_method=a.init, rank=rank, world_size=size,
                                timeout=timedelta(seconds=120))
        self.rank, self.size = dist.get_rank(), dist.get_world_size()
        # It broadcasts rank 0's parameters. broadcast_buffers=False: like
        # horovodcpp, only gradients travel during training (the default would
        # also broadcast BatchNorm's running statistics before every forward).
        self.model = DistributedDataParallel(model, broadcast_buffers=False)
        if a.fp16_allreduce:
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
            self.model.register_comm_hook(None, default_hooks.fp16_compress_hook)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9)

    def barrier(self):
        self.dist.barrier()

    def max(self, value):
        import torch
        x = torch.tensor([value], dtype=torch.float64)
        self.dist.all_reduce(x, op=self.dist.ReduceOp.MAX)
        return float(x)

    def step(self, data, target, t):
        import torch.nn.functional as F
        t0 = time.perf_counter()
        self.optimizer.zero_grad()
        loss = F.cross_entropy(self.model(data), target)
        t1 = time.perf_counter()
        loss.backward()  # DDP's reducer allreduces buckets and waits for them here
        t2 = time.perf_counter()
        self.optimizer.step()
        t3 = time.perf_counter()
        t[0] += t1 - t0
        t[1] += t2 - t1
        t[3] += t3 - t2
        return loss

    def describe(self):
        return ("torch DistributedDataParallel, backend %s, bucket_cap_mb 25 (default), "
                "broadcast_buffers False" % (
            self.dist.get_backend()))

    def finish(self):
        self.dist.barrier()
        # Tearing DDP down can deadlock in torch 1.13 (the Reducer's
        # ProcessGroupGloo joins its worker thread while holding the GIL that
        # thread waits for): seen here once in about 20 runs. Every result is
        # printed by now, so leave without the teardown.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def thread_cpu_seconds():
    """(CPU seconds of this process's main thread, of all its other threads,
    including those that have exited): the others are the communication
    threads (horovodcpp's coordinator, gloo's, MPI's)."""
    tick = os.sysconf("SC_CLK_TCK")

    def cpu(path):  # utime + stime
        fields = open(path).read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick

    total = cpu("/proc/self/stat")
    main = cpu("/proc/self/task/%d/stat" % os.getpid())
    return main, total - main


def worker(a):
    import torch
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)  # the same initial model on both sides (rank 0's is broadcast)
    model = build_model(a.model, a.image_size, a.num_classes)
    if a.framework == "hvd":
        import horovodcpp.torch as hvd
        hvd.init()
        side = Hvd(a, model)
    else:
        side = Ddp(a, model)
    rank, size = side.rank, side.size
    gen = torch.Generator().manual_seed(1000 + rank)  # each rank its own batch
    data = torch.randn(a.batch_size, 3, a.image_size, a.image_size, generator=gen)
    target = torch.randint(0, a.num_classes, (a.batch_size,), generator=gen)
    nparams = sum(p.numel() for p in model.parameters())
    ntensors = sum(1 for p in model.parameters() if p.requires_grad)

    def log(text):
        if rank == 0:  # one write per line: mpirun --tag-output tags every write
            sys.stdout.write(text + "\n")
            sys.stdout.flush()

    log("# train_bench %s (torch %s): %s" % (a.framework, torch.__version__, side.describe()))
    log("# command: %s" % " ".join(shlex.quote(x) for x in [sys.executable] + sys.argv))
    log("# ranks %d, rank 0 on %s (%d hardware threads), torch threads per rank %d; "
        "load average: %s" % (size, socket.gethostname(), os.cpu_count(),
                              torch.get_num_threads(), open("/proc/loadavg").read().strip()))
    log("# model %s: %d parameters in %d tensors (%.1f MiB of float32 gradients); batch %d per "
        "rank, 3x%dx%d images, SGD momentum 0.9; warmup %d, rounds %d x %d steps"
        % (a.model, nparams, ntensors, nparams * 4 / 2**20, a.batch_size, a.image_size,
           a.image_size, a.warmup, a.rounds, a.batches_per_round))
    t = [0.0] * 4
    for _ in range(a.warmup):
        side.step(data, target, t)
    rates = []
    t = [0.0] * 4
    cpu0 = thread_cpu_seconds()
    for r in range(a.rounds):
        side.barrier()
        start = time.perf_counter()
        for _ in range(a.batches_per_round):
            loss = side.step(data, target, t)
        seconds = side.max(time.perf_counter() - start)
        rate = size * a.batch_size * a.batches_per_round / seconds
        rates.append(rate)
        log("round %d: %.1f img/sec total (%.1f ms per step)"
            % (r, rate, 1e3 * seconds / a.batches_per_round))
    cpu1 = thread_cpu_seconds()
    steps = a.rounds * a.batches_per_round
    ms = [1e3 * x / steps for x in t]
    cpu_ms = [1e3 * (y - x) / steps for x, y in zip(cpu0, cpu1)]
    log("# rank 0 ms per step: forward %.1f, backward %.1f, wait for gradients %.1f, update "
        "%.1f (ddp: its gradient allreduce is inside backward)" % tuple(ms))
    log("# rank 0 CPU ms per step: main thread %.1f, other threads (communication) %.1f"
        % tuple(cpu_ms))
    mean = sum(rates) / len(rates)
    log("%s framework=%s np=%d img_per_sec=%s mean=%.1f loss=%.6f fwd_ms=%.2f bwd_ms=%.2f "
        "wait_ms=%.2f update_ms=%.2f main_cpu_ms=%.2f comm_cpu_ms=%.2f"
        % (RESULT, a.framework, size, ",".join("%.1f" % x for x in rates), mean, float(loss),
           *ms, *cpu_ms))
    side.finish()
    return 0


# --------------------------------------------------------------------------
# driver side


def worker_args(a):
    args = ["--model", a.model, "--batch-size", str(a.batch_size), "--image-size",
            str(a.image_size), "--num-classes", str(a.num_classes), "--warmup", str(a.warmup),
            "--batches-per-round", str(a.batches_per_round), "--rounds", str(a.rounds),
            "--threads", str(a.threads)]
    return args + (["--fp16-allreduce"] if a.fp16_allreduce else [])


def side_name(side):
    if side == "ddp":
        return "DDP (gloo)"
    spec = side.split(":", 1)[1]
    if spec == "none":
        return "horovodcpp"
    if spec.startswith("bucket:"):
        return "horovodcpp, %s MiB groups" % spec.split(":", 1)[1]
    return "horovodcpp, groups=%s" % spec


def launch(cmds, env, log, timeout):
    """Runs the commands at once (one per rank, or one launcher); rank 0's
    (the first's) stdout goes to `log`, every stderr to log.err.<i>."""
    procs = []
    for i, (cmd, extra) in enumerate(cmds):
        out = open(log, "w") if i == 0 else subprocess.DEVNULL
        err = open("%s.err.%d" % (log, i), "w")
        procs.append(subprocess.Popen(cmd, env=dict(env, **extra), stdout=out, stderr=err))
    deadline = time.time() + timeout
    rc = 0
    for proc in procs:
        try:
            rc |= proc.wait(timeout=max(1, deadline - time.time())) != 0
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            rc = 1
    return rc


def parse_result(path):
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return None
    for line in lines:
        # Launcher prefixes ("[1,0]<stdout>:", "[0]<stdout>: "), wherever a
        # write began.
        line = re.sub(r"\[[0-9,]+\]<std(?:out|err)>: ?", "", line).strip()
        if line.startswith(RESULT):
            return dict(kv.split("=", 1) for kv in line[len(RESULT):].split())
    return None


def driver(a):
    script = os.path.abspath(__file__)
    python = sys.executable
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    if a.pythonpath:
        env["PYTHONPATH"] = os.path.abspath(a.pythonpath) + (
            os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    logs = a.logs or tempfile.mkdtemp(prefix="train_bench.")
    os.makedirs(logs, exist_ok=True)
    hvdrun = os.path.abspath(a.hvdrun)
    common = worker_args(a)
    say = lambda text: print("train_bench: " + text, file=sys.stderr, flush=True)  # noqa: E731

    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_before = open("/proc/loadavg").read().split()[:3]
    sides = ["hvd:" + spec for spec in a.hvd_groups.split(",")] + ["ddp"]
    runs = []  # (side, launch index, result dict or None, log, command, load)
    for rep in range(a.repeats):
        for side in sides:
            log = os.path.join(logs, "%s.np%d.%d" % (side.replace(":", "_"), a.np, rep))
            if side.startswith("hvd:"):
                cmd = [hvdrun, "-np", str(a.np)] + shlex.split(a.hvdrun_args) + [
                    python, script, "--framework", "hvd", "--hvd-groups",
                    side.split(":", 1)[1]] + common
                cmds = [(cmd, {})]
                shown = " ".join(shlex.quote(x) for x in cmd)
            else:
                store = tempfile.mkdtemp(prefix="ddp_store.", dir=logs)
                cmd = [python, script, "--framework", "ddp", "--init",
                       "file://" + os.path.join(store, "init")] + common
                cmds = [(cmd, {"RANK": str(r), "WORLD_SIZE": str(a.np)}) for r in range(a.np)]
                shown = "%d x RANK=r WORLD_SIZE=%d %s" % (
                    a.np, a.np, " ".join(shlex.quote(x) for x in cmd))
            load = open("/proc/loadavg").read().split()[0]
            say("%s launch %d (load %s): %s" % (side_name(side), rep, load, shown))
            rc = launch(cmds, env, log, a.timeout)
            result = parse_result(log) if rc == 0 else None
            if result is None:
                say("%s launch %d FAILED (see %s*)" % (side_name(side), rep, log))
            runs.append((side, rep, result, log, shown, load))
    load_after = open("/proc/loadavg").read().split()[:3]

    def rates(side):
        return [float(x) for f, _, r, _, _, _ in runs if f == side and r
                for x in r["img_per_sec"].split(",")]

    mean = {side: (sum(rates(side)) / len(rates(side)) if rates(side) else None)
            for side in sides}
    lines = [
        "synthetic training: horovodcpp.torch DistributedOptimizer vs torch DDP (gloo), "
        "np %d, model %s, batch %d per rank, 3x%dx%d, SGD momentum 0.9, %d thread(s) per rank"
        % (a.np, a.model, a.batch_size, a.image_size, a.image_size, a.threads),
        "date: %s; host: %s, %d cores; load average (1/5/15 min) before: %s, after: %s"
        % (started, socket.gethostname(), os.cpu_count(), " ".join(load_before),
           " ".join(load_after)),
        "per launch: warmup %d steps, then %d timed rounds of %d steps; img/sec = np * batch * "
        "steps / (max over ranks of the round's time); launches alternate %s"
        % (a.warmup, a.rounds, a.batches_per_round, ", ".join(side_name(x) for x in sides)),
        "",
        "| launch | side | load (1 min) | img/sec per round | mean | rank 0 ms/step: "
        "fwd / bwd / wait / update | rank 0 CPU ms/step: main / other threads | final loss |",
        "|---|---|---:|---|---:|---|---|---:|",
    ]
    for side, rep, r, _, _, load in runs:
        if r is None:
            lines.append("| %d | %s | %s | FAILED | - | - | - | - |" % (rep, side_name(side), load))
            continue
        lines.append("| %d | %s | %s | %s | %s | %s / %s / %s / %s | %s / %s | %s |" % (
            rep, side_name(side), load, ", ".join(r["img_per_sec"].split(",")), r["mean"],
            r["fwd_ms"], r["bwd_ms"], r["wait_ms"], r["update_ms"], r["main_cpu_ms"],
            r["comm_cpu_ms"], r["loss"]))
    lines.append("")
    lines.append("mean img/sec over all timed rounds: " + ", ".join(
        "%s %s" % (side_name(x), "%.1f" % mean[x] if mean[x] else "n/a") for x in sides))
    summary = "; ".join("%s / DDP = %.2f" % (side_name(x), mean[x] / mean["ddp"])
                        for x in sides if x != "ddp" and mean[x] and mean["ddp"])
    lines += ["", summary, "", "commands:"]
    lines += sorted({"  " + shown for _, _, _, _, shown, _ in runs})
    report = "\n".join(lines)
    print(report)
    if a.out:
        with open(a.out, "w") as f:
            f.write(report + "\n")
    say("raw outputs in %s" % logs)
    return 0 if all(r for _, _, r, _, _, _ in runs) else 1


def main():
    a = parse_args()
    if a.framework == "both":
        return driver(a)
    if a.framework == "ddp" and not a.init:
        sys.exit("train_bench: --framework ddp needs --init file:///fresh/path")
    return worker(a)


if __name__ == "__main__":
    sys.exit(main())
