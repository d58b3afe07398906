#!/usr/bin/python3
"""Convergence with each gradient compressor: examples/pytorch/mnist.py on
Fashion-MNIST at 2 ranks, the same seed and epochs for every compressor;
each must reach a test accuracy within 1.0 point of uncompressed training
(and end with identical parameters on both ranks, which the example checks).

    compression_convergence.py HVDRUN [--epochs N]
"""
import argparse
import os
import re
import subprocess
import sys

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                       "pytorch", "mnist.py")
# The settings docs/compression.md reports (thresholds are in gradient units).
COMPRESSORS = [
    ("none", []),
    ("fp16", ["--compression", "fp16"]),
    ("bf16", ["--compression", "bf16"]),
    ("twobit", ["--compression", "twobit", "--twobit-threshold", "0.05"]),
    ("powersgd", ["--compression", "powersgd", "--powersgd-rank", "4",
                  "--powersgd-start-iter", "10"]),
]


def accuracy(hvdrun, epochs, options):
    command = [hvdrun, "-np", "2", sys.executable, EXAMPLE, "--epochs", str(epochs),
               "--log-interval", "100000"] + options
    run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True, timeout=900)
    found = re.findall(r"^\S*test accuracy=([0-9.]+)$", run.stdout, re.M)
    if run.returncode != 0 or not found or "parameters identical on all 2 ranks" not in run.stdout:
        sys.exit("FAIL: {} exited {}:\n{}".format(" ".join(command), run.returncode,
                                                  run.stdout[-3000:]))
    return 100 * float(found[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("hvdrun")
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    results = [(name, accuracy(args.hvdrun, args.epochs, options))
               for name, options in COMPRESSORS]
    baseline = results[0][1]
    failed = False
    print("Fashion-MNIST, 2 ranks, {} epochs: test accuracy (points)".format(args.epochs))
    for name, value in results:
        ok = value >= baseline - 1.0
        failed |= not ok
        print("{:<10} {:6.2f}  {:+.2f} {}".format(name, value, value - baseline,
                                                  "ok" if ok else "FAIL: more than 1.0 below"))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
