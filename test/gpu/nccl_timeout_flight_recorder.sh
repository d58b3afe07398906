#!/usr/bin/env bash
# The flight recorder on a forced NCCL timeout, one rank on GPU 0: a job
# (hvdrun --gloo, NCCL for its CUDA tensors, HOROVODCPP_NCCL_TIMEOUT_SECONDS=3)
# reduces a tensor, then queues a kernel that spins for about 10 s on its
# stream and reduces the tensor again ("allreduce.stuck"): NCCL's kernel
# waits behind the spin, the wait times out and the communicator is
# aborted. The job must fail within its bound, leave a dump naming the stuck
# collective as failed, and hvdrun must print its analysis with the timeout.
# No device: exit 77 (skipped).
#
# usage: nccl_timeout_flight_recorder.sh HVDRUN PYTHON [LOG]
set -u
hvdrun=$(readlink -f "$1")
python=$2
log=${3:-$(mktemp)}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../runner/report.sh"

gpus=$(bash "$HERE/gpu_count.sh")
if [[ -z $gpus || $gpus -lt 1 ]]; then
  echo "SKIPPED: no CUDA device (neither nvidia-smi nor /dev/nvidia* shows a GPU)"
  exit 77
fi
work=$(mktemp -d /tmp/hvd_nccl_timeout.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat >"$work/job.py" <<'EOF'
import time

import torch

import horovodcpp.torch as hvd

hvd.init()
torch.cuda.set_device(0)
x = torch.ones(1 << 20, device="cuda")
hvd.allreduce_(x, name="warm")
torch.cuda.synchronize()
torch.cuda._sleep(20 * 10**9)  # cycles: about 10 s at 2 GHz, on the current stream
hvd.allreduce_(x, name="stuck")  # returns once queued behind the spin
deadline = time.time() + 60
step = 0
while time.time() < deadline:  # the timeout reaches the next collective
    time.sleep(0.5)
    hvd.allreduce_(x, name="after.%d" % step)
    step += 1
print("no error within 60 s")
EOF

start=$SECONDS
(cd "$work" && HOROVODCPP_NCCL_TIMEOUT_SECONDS=3 timeout -s KILL 120 "$hvdrun" -np 1 --gloo \
  "$python" "$work/job.py") >"$log" 2>&1
rc=$?
elapsed=$((SECONDS - start))
dump=$(ls "$work"/hvdrun-flight-recorder.*/horovodcpp-flight-recorder.rank0.txt 2>/dev/null | head -1)
why=""
[[ $rc -eq 0 ]] && why+="the job succeeded; "
[[ $rc -eq 137 ]] && why+="the job hung (killed after 120 s); "
[[ -z $dump ]] && why+="no flight recorder dump; "
if [[ -n $dump ]]; then
  grep -q "allreduce.stuck" "$dump" || why+="the dump does not name allreduce.stuck; "
  grep "allreduce.stuck" "$dump" | grep -q "failed" || why+="allreduce.stuck is not failed in the dump; "
  cp "$dump" "$log.dump.txt"
fi
grep -q "hvdrun: flight recorder" "$log" || why+="hvdrun printed no analysis; "
grep -q "did not complete within" "$log" || why+="no NCCL timeout in the output; "
report "NCCL timeout: the job failed in ${elapsed}s with a dump naming allreduce.stuck" "$why" "$log"
exit $((FAILED > 0))
