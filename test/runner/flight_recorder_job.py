"""A 3-rank job for flight_recorder_tests.sh: blocking allreduces of two
names (grad.fc1, grad.fc2) for 20 steps, then SCENARIO:
  skip      rank 1 skips grad.fc3 and submits nothing more (sleeps)
  order     rank 0 reduces a then b, the others b then a
  loop      every rank loops on grad.fc1 (the script stops or kills rank 1)
  usr1      once every rank is idle, rank 0 sends each SIGUSR1; the job
            ends normally
Every rank prints "flight_recorder_job rank R pid P" first."""
import os
import signal
import sys
import time

import torch

import horovodcpp.torch as hvd


def main():
    scenario = sys.argv[1]
    hvd.init()
    print("flight_recorder_job rank {} pid {}".format(hvd.rank(), os.getpid()), flush=True)
    x = torch.ones(4)
    for _ in range(20):
        hvd.allreduce_(x, name="grad.fc1")
        hvd.allreduce_(x, name="grad.fc2")
    if scenario == "skip":
        if hvd.rank() == 1:
            time.sleep(60)
        hvd.allreduce_(x, name="grad.fc3")
    elif scenario == "order":
        first, second = ("a", "b") if hvd.rank() == 0 else ("b", "a")
        hvd.allreduce_(x, name=first)
        hvd.allreduce_(x, name=second)
    elif scenario == "loop":
        # Rank 1 is the slow one: when it is signalled, the others already
        # wait for it in grad.fc1 (a rank between steps when rank 1 dies
        # waits in nothing).
        for _ in range(100000):
            hvd.allreduce_(x, name="grad.fc1")
            time.sleep(0.1 if hvd.rank() == 1 else 0.01)
    elif scenario == "usr1":
        pids = hvd.allgather_object(os.getpid())
        # The signals reach idle ranks: right after the allgather, a rank
        # still completing it dumped it as awaited.
        hvd.barrier()
        if hvd.rank() == 0:
            time.sleep(0.5)
            for pid in pids:
                os.kill(pid, signal.SIGUSR1)
        time.sleep(2)  # idle while the dumps are written (by a thread of their own)
        hvd.barrier()
    print("flight_recorder_job rank {} done".format(hvd.rank()), flush=True)


if __name__ == "__main__":
    main()
