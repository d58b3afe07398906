#!/usr/bin/env bash
# The horovodcpp torch.distributed backend and the Horovod API as users
# launch them without hvdrun (each within a time bound, never a hang):
#   torchrun        torchrun --nproc_per_node=2 of a Horovod-API script (one
#                   job of 2 ranks, not two jobs of one) and of a DDP script
#                   on backend "horovodcpp"
#   env://          two processes given RANK, WORLD_SIZE, MASTER_ADDR and
#                   MASTER_PORT by hand (no LOCAL_*: one host), with
#                   MASTER_PORT + 1 held by another process
#   old PyTorch     the DDP script with a PyTorch below the minimum: every
#                   rank refuses at init_process_group, saying which version
#                   it needs
# usage: launch_tests.sh HVDRUN TORCH_PYTHON [OLD_TORCH_PYTHON]
set -u
HVDRUN=$1 PYTHON=$2 OLD_PYTHON=${3:-}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../runner/report.sh"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
TORCHRUN=$(dirname "$PYTHON")/torchrun

free_port() { "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])'; }

# torchrun --nproc_per_node=2 SCRIPT: each rank prints a line matching PATTERN (R: its rank).
torchrun_check() {  # name script pattern
  local log="$WORK/torchrun-$(basename "$2").log" rc why="" r
  timeout -s KILL 120 "$TORCHRUN" --nproc_per_node=2 --master_port "$(free_port)" "$2" >"$log" 2>&1
  rc=$?
  [ "$rc" -ne 0 ] && why+="torchrun exited $rc; "
  for r in 0 1; do
    grep -q "${3//R/$r}" "$log" || why+="no line '${3//R/$r}' from rank $r; "
  done
  report "$1" "$why" "$log"
}
# 1, 2. torchrun: one job of 2 ranks (Gloo), not two jobs of one
torchrun_check "torchrun --nproc_per_node=2, Horovod API: one job of 2 ranks (Gloo)" \
  "$HERE/launched_horovod_api.py" "horovod api rank R of 2 local R of 2 sum 3 transport gloo"
torchrun_check "torchrun --nproc_per_node=2, DDP on backend horovodcpp" \
  "$HERE/launched_ddp.py" "ddp rank R of 2 gradient ok"

# 3. plain env://, with MASTER_PORT + 1 held by another process: rank 0
# hosts horovodcpp's store on a port it picks and tells through torch's.
log="$WORK/env.log"
port=$(free_port)
"$PYTHON" -c 'import socket, sys, time
s = socket.socket(); s.bind(("", int(sys.argv[1]))); s.listen(); time.sleep(300)' $((port + 1)) &
holder=$!
pids=()
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout -s KILL 120 \
    "$PYTHON" "$HERE/launched_ddp.py" >>"$log" 2>&1 &
  pids+=($!)
done
wait "${pids[@]}"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
why=""
for r in 0 1; do
  grep -q "ddp rank $r of 2 gradient ok" "$log" || why+="rank $r's gradient is not the average; "
done
report "RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT by hand (env://), DDP, MASTER_PORT + 1 taken" "$why" "$log"

# 4. a PyTorch below the minimum, under hvdrun
if [ -n "$OLD_PYTHON" ]; then
  log="$WORK/old.log"
  start=$SECONDS
  timeout -s KILL 120 "$HVDRUN" -np 2 --gloo "$OLD_PYTHON" "$HERE/launched_ddp.py" >"$log" 2>&1
  rc=$?
  why=""
  [ "$rc" -eq 0 ] && why+="exited 0; "
  [ $((SECONDS - start)) -gt 60 ] && why+="took $((SECONDS - start)) s; "
  for r in 0 1; do
    grep -q "^\[$r\].*the horovodcpp torch.distributed backend needs PyTorch >= " "$log" ||
      why+="rank $r does not say which PyTorch it needs; "
  done
  report "an old PyTorch ($("$OLD_PYTHON" -c 'import torch; print(torch.__version__)')): refused by every rank" "$why" "$log"
fi

summary
