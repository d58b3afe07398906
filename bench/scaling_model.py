#!/usr/bin/env python3
"""The scaling model of docs/scaling.md: predicted data-parallel efficiency
of ResNet-50 and BERT-large at 8 to 1,024 GPUs, and the same model against
Horovod's published 512-GPU figure. A model, not a measurement: its inputs
and their sources are in docs/scaling.md.

usage: scaling_model.py
"""
import math

GB = 1e9
MIB = 1 << 20

# Measured (bench/README.md, one H200): a synchronized allreduce launch.
LAUNCH_S = 20.6e-6
# Assumptions (docs/scaling.md): share of peak bandwidth reached, tree
# latency per level between nodes, one TCP hop of the control plane.
EFFICIENCY = 0.8
NET_LATENCY_S = 5e-6
CONTROL_HOP_S = 20e-6
FAN_OUT = 8


def tree_depth(ranks):
    """Levels below rank 0 of the control plane's tree of fan-out 8."""
    depth, reached, level = 0, 1, 1
    while reached < ranks:
        level *= FAN_OUT
        reached += level
        depth += 1
    return depth


def exposed_seconds(compute_s, grad_bytes, launches, gpus, per_node, nvlink_bps, node_bps,
                    launch_s=LAUNCH_S):
    """Time per step the allreduces and the control plane add to compute."""
    backward = compute_s * 2 / 3
    nodes = max(1, gpus // per_node)
    local = min(per_node, gpus)
    piece = grad_bytes / launches
    finished = 0.0
    for i in range(launches):
        ready = (i + 1) / launches * backward
        took = launch_s
        if local > 1:
            took += 2 * (local - 1) / local * piece / (nvlink_bps * EFFICIENCY)
        if nodes > 1:
            took += 2 * (nodes - 1) / nodes * piece / (node_bps * EFFICIENCY)
            took += 2 * math.log2(nodes) * NET_LATENCY_S
        finished = max(ready, finished) + took
    control = 2 * tree_depth(gpus) * CONTROL_HOP_S
    return max(0.0, finished - backward) + control


def efficiency(compute_s, exposed_s):
    return compute_s / (compute_s + exposed_s)


MODELS = [
    # name, compute per step (s), gradient bytes, launches per step
    ("ResNet-50", 64 / 2207.5, 25.6e6 * 4, 15),
    ("BERT-large", 0.083, 336e6 * 4, 56),
]
NETWORKS = [("8 x 400 Gbit/s", 8 * 50 * GB), ("1 x 400 Gbit/s", 50 * GB),
            ("1 x 100 Gbit/s", 12.5 * GB)]
GPUS = [8, 64, 512, 1024]


def main():
    print("| model | network per node | " + " | ".join(f"{n} GPUs" for n in GPUS) + " |")
    print("|---|---|" + "---|" * len(GPUS))
    for name, compute, grad_bytes, launches in MODELS:
        for network, node_bps in NETWORKS:
            cells = []
            for gpus in GPUS:
                exposed = exposed_seconds(compute, grad_bytes, launches, gpus, 8, 450 * GB,
                                          node_bps)
                cells.append(f"{efficiency(compute, exposed):.0%} ({exposed * 1e3:.1f} ms)")
            print(f"| {name} | {network} | " + " | ".join(cells) + " |")
    print()
    print("Horovod's published setup: ResNet-101 at 512 GPUs (4 per server), 25 Gbit/s; "
          "published: 90%")
    for compute in (0.40, 0.49):
        for launches, label in ((math.ceil(44.5e6 * 4 / (64 * MIB)), "64 MiB buckets"),
                                (15, "15 launches")):
            exposed = exposed_seconds(compute, 44.5e6 * 4, launches, 512, 4, 10 * GB,
                                      25 / 8 * GB, launch_s=61e-6)
            print(f"  T_c {compute:.2f} s, {label}: {efficiency(compute, exposed):.0%}")


if __name__ == "__main__":
    main()
