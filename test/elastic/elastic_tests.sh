#!/usr/bin/env bash
# Elastic training end to end, under hvdrun --min-np / --host-discovery-script:
#   torch     -np 3 --min-np 2 on this machine: worker 2 SIGKILLs itself in
#             the middle of step 5 (gradients submitted, update not applied);
#             the other two go on from the last commit (step 5, or step 6
#             where worker 2's gradients were reduced before it died), as a job of 2,
#             finish, and agree on every parameter. Prints the time from the
#             death to the survivors' next completed step.
#   below     -np 2 --min-np 2 --elastic-timeout 5: a rank dies, and hvdrun
#             ends the job with one error line within the timeout (+10 s);
#             no process is left.
#   grow      two "hosts" (network namespaces, test/runner/netns_pair.sh):
#             hvdrun in the first with a discovery script that offers
#             10.203.0.1:3; worker 2 dies, the job goes on with 2; then the
#             script also offers 10.203.0.2:1, and the job grows back to 3
#             (the new rank in the second namespace, started through the
#             remote shell) and finishes with identical parameters on all 3.
#             Skipped without network namespaces.
#   sharded   as torch, with DistributedOptimizer(sharding=2): the survivors
#             also hold the whole optimizer state of that commit, shared
#             out over 2 ranks (its sum as committed, half of it each).
#   grow_sharded  as grow, with sharding=2: the new rank starts with its
#             third of the whole optimizer state of the last commit.
#   keras     as torch, with model.fit and the Keras elastic callbacks.
#
# usage: elastic_tests.sh HVDRUN PYTHON SCENARIO...   (PYTHONPATH: the package)
# Prints one line per scenario and "N passed, M failed"; exit 1 if any failed.
set -u
HVDRUN=$(readlink -f "${1:?usage: elastic_tests.sh HVDRUN PYTHON SCENARIO...}")
PYTHON=${2:?usage: elastic_tests.sh HVDRUN PYTHON SCENARIO...}
shift 2
HERE=$(dirname "$(readlink -f "$0")")
TAG="hvdelastic-$$-$RANDOM$RANDOM"
WORK=$(mktemp -d /tmp/hvdrun_elastic.XXXXXX)
export TF_CPP_MIN_LOG_LEVEL=3
. "$HERE/../runner/netns_pair.sh"
. "$HERE/../runner/report.sh"

# Seconds from "killing worker ... time T" to the first step a survivor
# completed after it ("... size N ... time T2").
recovery_seconds() {  # log size
  awk -v size="$2" '
    /killing worker/ { for (i = 1; i < NF; ++i) if ($i == "time") killed = $(i + 1) }
    killed && /<stdout>: step / && $0 ~ (" size " size " ") {
      for (i = 1; i < NF; ++i) if ($i == "time" && (first == "" || $(i + 1) < first)) first = $(i + 1)
    }
    END { if (killed && first) printf "%.2f", first - killed }' "$1"
}

# The "parameters identical on all N ranks (sum X)" lines: N of them, one X.
check_agreement() {  # log ranks -> why
  local lines sums
  lines=$(grep -c "parameters identical on all $2 ranks" "$1")
  sums=$(grep -o "parameters identical on all $2 ranks (sum [^)]*)" "$1" | sort -u | wc -l)
  [ "$lines" -ne "$2" ] && echo -n "$lines of $2 ranks reported identical parameters; "
  [ "$sums" -gt 1 ] && echo -n "the ranks' parameter sums differ; "
}

# A job of 3 that lost worker 2: the others went on from the last commit
# (the same one, a match of the extended regex `resumed-from`) as ranks 0
# and 1 of 2 and agree on every parameter.
check_survivors() {  # log killed-at resumed-from -> why
  local why="" resumed
  grep -q "^\[2\]<stdout>: killing worker 2 at $2 " "$1" || why+="worker 2 was not killed; "
  grep -q "^hvdrun: elastic: round 2: 2 rank(s) on localhost:2 (rank 2 (worker 2) on localhost was killed by signal 9" "$1" ||
    why+="no round of 2 after the death (rounds: $(grep '^hvdrun: elastic: round' "$1" | tr '\n' ' ')); "
  for w in 0 1; do
    grep -Eq "^\[$w\]<stdout>: train from $3 size 2 rank $w worker $w " "$1" ||
      why+="worker $w did not go on from $3 as rank $w of 2; "
  done
  resumed=$(grep -Eo "^\[[01]\]<stdout>: train from $3 size 2 " "$1" | sed 's/^\[.\]//' | sort -u | wc -l)
  [ "$resumed" -gt 1 ] && why+="the survivors went on from different commits; "
  echo -n "$why$(check_agreement "$1" 2)"
}

scenario_torch() {
  local log="$WORK/torch.log" why=""
  timeout -s KILL 180 "$HVDRUN" -np 3 --min-np 2 "$PYTHON" "$HERE/torch_train.py" --steps 15 \
    --final-size 2 --final-steps 5 --kill-worker 2 --kill-step 5 --tag "$TAG" >"$log" 2>&1
  local rc=$?
  [ "$rc" -ne 0 ] && why+="hvdrun exited $rc; "
  # Worker 2 dies after its backward pass has handed its gradients over:
  # if they were reduced before the kill, the survivors also finish step 5
  # and commit step 6 (the membership change then interrupts that commit).
  why+=$(check_survivors "$log" "step 5" "step [56]")
  report "torch: a rank killed mid-step, 2 go on from the last commit ($(recovery_seconds "$log" 2) s from the death to the next step)" "$why" "$log"
}

scenario_sharded() {
  local log="$WORK/sharded.log" why="" from committed
  timeout -s KILL 180 "$HVDRUN" -np 3 --min-np 2 "$PYTHON" "$HERE/torch_train.py" --steps 15 \
    --final-size 2 --final-steps 5 --kill-worker 2 --kill-step 5 --sharding 2 --tag "$TAG" \
    >"$log" 2>&1
  local rc=$?
  [ "$rc" -ne 0 ] && why+="hvdrun exited $rc; "
  why+=$(check_survivors "$log" "step 5" "step 5")
  # 676 parameters (momentum of each) over 2 ranks: 338 each.
  for w in 0 1; do
    from=$(grep -o "^\[$w\]<stdout>: state at step 5 size 2 sum [^ ]* shard 338$" "$log" |
           awk '{print $(NF - 2)}')
    committed=$(grep -o "^\[$w\]<stdout>: committing step 5 state sum [^ ]*$" "$log" |
                awk '{print $NF}' | head -n1)
    [ -z "$from" ] && why+="worker $w did not restart with its half of the state; "
    [ -n "$from" ] && [ "$from" != "$committed" ] &&
      why+="worker $w restarted with state sum $from, committed $committed; "
  done
  report "sharded: ZeRO-2 state re-sharded over the 2 survivors" "$why" "$log"
}

scenario_below() {
  local log="$WORK/below.log" why="" start took
  start=$(date +%s.%N)
  timeout -s KILL 180 "$HVDRUN" -np 2 --min-np 2 --elastic-timeout 5 "$PYTHON" \
    "$HERE/torch_train.py" --steps 100000 --kill-worker 1 --kill-step 3 --tag "$TAG" \
    >"$log" 2>&1
  local rc=$?
  local killed
  killed=$(grep -o "killing worker 1 at step 3 time [0-9.]*" "$log" | awk '{print $NF}')
  [ "$rc" -ne 1 ] && why+="hvdrun exited $rc (not 1); "
  if [ -n "$killed" ]; then
    took=$(echo "$(date +%s.%N) - $killed" | bc)
    [ "$(echo "$took > 15" | bc)" = 1 ] && why+="ended ${took}s after the death (limit 5 + 10 s); "
  else
    why+="worker 1 was not killed; "
  fi
  # The error ends the job's output; the flight recorder's analysis follows.
  [ "$(grep -v "^hvdrun: flight recorder\|^hvdrun:   " "$log" | tail -n1)" = "hvdrun: elastic: only 1 slot(s) available, fewer than --min-np 2, for 5 s (--elastic-timeout); job exit code 1" ] ||
    why+="the last line before the flight recorder's is not the error; "
  grep -q "^hvdrun: flight recorder (hvdrun --analyze " "$log" ||
    why+="no flight recorder analysis; "
  [ "$(grep -c "job exit code" "$log")" -eq 1 ] || why+="not exactly one error; "
  grep -q "Traceback" "$log" && why+="a rank printed a traceback; "
  local left
  left=$(pgrep -f -- "$TAG" | tr '\n' ' ')
  [ -n "$left" ] && why+="processes left: $left; "
  report "below --min-np: one error within --elastic-timeout (${took:-?} s after the death)" "$why" "$log"
}

scenario_grow() {  # [extra arguments of torch_train.py]
  local log="$WORK/grow$(echo "$*" | tr -d ' -').log" why=""
  netns_pair_create
  case $? in
    0) ;;
    77) echo "SKIP grow (no network namespaces)"; return ;;
    *) report "grow" "cannot set up the namespaces" /dev/null; return ;;
  esac
  local netns_b
  netns_b=$(ip netns exec "$NS_B" readlink /proc/self/ns/net)
  echo "$ADDR_A:3" >"$WORK/hosts"
  timeout -s KILL 240 ip netns exec "$NS_A" "$HVDRUN" -np 3 --min-np 2 --max-np 3 \
    --host-discovery-script "cat $WORK/hosts" --remote-shell "$WORK/rsh {host}" \
    "$PYTHON" "$HERE/torch_train.py" --steps 15 --final-size 3 --final-steps 10 \
    --kill-worker 2 --kill-step 5 --step-seconds 0.1 "$@" --tag "$TAG" >"$log" 2>&1 &
  local job=$!
  # Once the job runs on 2, offer the second host.
  for _ in $(seq 1200); do
    grep -q "^hvdrun: elastic: round 2: 2 rank(s)" "$log" && break
    kill -0 "$job" 2>/dev/null || break
    sleep 0.1
  done
  echo "$ADDR_B:1" >>"$WORK/hosts"
  wait "$job"
  local rc=$?
  [ "$rc" -ne 0 ] && why+="hvdrun exited $rc; "
  grep -q "^hvdrun: elastic: round 2: 2 rank(s) on $ADDR_A:2 " "$log" || why+="no round of 2 after the death; "
  grep -q "^hvdrun: elastic: round 3: 3 rank(s) on $ADDR_A:2,$ADDR_B:1, 1 of them new (the hosts changed)" "$log" ||
    why+="no round of 3 with the new host; "
  grep "^\[3\]<stdout>: train from step [0-9]* size 3 rank 2 " "$log" |
    grep -qF "worker 3 host $ADDR_B netns $netns_b" ||
    why+="the new rank did not run in the second namespace; "
  why+=$(check_agreement "$log" 3)
  netns_pair_delete
  [ -n "${GROW_CHECK:-}" ] && why+=$("$GROW_CHECK" "$log")
  report "grow${*:+ ($*)}: a discovered host brings the job back to 3 ranks" "$why" "$log"
}

# The new rank (worker 3, rank 2 of 3) starts from the last commit's whole
# optimizer state (its sum) and holds its third: 227 + 226 + 223 of the 676
# momentum elements at 3 ranks.
check_new_rank_state() {  # log -> why
  local line step sum committed
  line=$(grep -o "^\[3\]<stdout>: state at step [0-9]* size 3 sum [^ ]* shard [0-9]*$" "$1")
  [ -z "$line" ] && { echo -n "the new rank printed no state; "; return; }
  step=$(echo "$line" | awk '{print $5}')
  sum=$(echo "$line" | awk '{print $(NF - 2)}')
  committed=$(grep -o "^\[0\]<stdout>: committing step $step state sum [^ ]*$" "$1" |
              awk '{print $NF}' | tail -n1)
  [ "$sum" != "$committed" ] && echo -n "the new rank's state sum $sum, committed $committed; "
  [ "$(echo "$line" | awk '{print $NF}')" != 223 ] && echo -n "the new rank's shard is not 223; "
}

scenario_grow_sharded() {
  GROW_CHECK=check_new_rank_state scenario_grow --sharding 2
}

scenario_keras() {
  local log="$WORK/keras.log" why=""
  timeout -s KILL 300 "$HVDRUN" -np 3 --min-np 2 "$PYTHON" "$HERE/keras_train.py" --epochs 3 \
    --kill-worker 2 --kill-batch 3 --tag "$TAG" >"$log" 2>&1
  local rc=$?
  [ "$rc" -ne 0 ] && why+="hvdrun exited $rc; "
  why+=$(check_survivors "$log" "step 1.3" "epoch 1")
  report "keras: a rank killed in fit(), 2 go on from the last commit ($(recovery_seconds "$log" 2) s from the death to the next step)" "$why" "$log"
}

for scenario in "$@"; do
  "scenario_$scenario"
done
summary
