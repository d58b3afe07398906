#!/usr/bin/env bash
# run_peers.sh: horovodcpp next to its real peers, in one run on one machine,
# as one table of ratios (bench/README.md, "run_peers.sh, backend_bench, control_bench,
# fusion_bench").
#
#   bench/run_peers.sh [--out FILE] [--build DIR] [--np "2 4"]
#                      [--sizes 4,64K,1M,16M,64M] [--warmup 5] [--iters 20]
#                      [--train on|off] [--train-np 2] [--train-args "..."]
#
# For each rank count it runs, one after the other (never two at once):
#   1. horovodcpp, shm backend:   hvdrun -np N --mpi  allreduce_bench --mpi-baseline off
#      (the default on one host: data and negotiation through shared memory)
#      and its data path alone:   hvdrun -np N --mpi  backend_bench (Backend::allreduce,
#      no coordinator: no queue, no negotiation cycle)
#   2. horovodcpp, Gloo mode:     hvdrun -np N --gloo allreduce_bench --mpi-baseline off
#      (the default without MPI: data through shared memory, negotiation too)
#   3. horovodcpp, MPI backend:   HOROVODCPP_SHM=0 hvdrun -np N --mpi  allreduce_bench ...
#   4. horovodcpp, Gloo backend:  HOROVODCPP_SHM=0 hvdrun -np N --gloo allreduce_bench ...
#   5. raw MPI_Allreduce:         mpirun (hvdrun's transport flags) allreduce_bench --mpi-baseline only
#   6. raw Gloo ring allreduce:   N x gloo_allreduce_bench, FileStore in a temp dir
#   7. torch.distributed (gloo):  N x /usr/bin/python3 torch_allreduce_bench.py, file:// init
# All float32, Sum, in place, the same sizes, warm-up and iteration counts;
# each iteration starts after a barrier and the time is the max over ranks
# of the per-rank averages. It then prints ONE table: busbw (GB/s, nccl-tests:
# size/time * 2(n-1)/n) of the eight, and the ratios horovodcpp-shm / raw
# MPI, / raw Gloo and / torch.distributed, shm data path / raw MPI,
# horovodcpp-MPI / raw MPI, horovodcpp-Gloo / raw Gloo, and Gloo mode / MPI
# mode (horovodcpp-shm) and / raw Gloo. The 4 B row shows latency (us) instead, its
# ratios being peer time / horovodcpp time, so in every ratio column above 1
# means horovodcpp was faster. Every figure is measured by this run. The raw
# outputs are kept in a temp dir, named at the end.
#
# Then (--train on, the default) the synthetic training benchmark,
# bench/train_bench.py: the same model, batch and optimizer trained with
# horovodcpp.torch's DistributedOptimizer under `hvdrun -np 2` and with torch
# DistributedDataParallel on gloo (2 processes), alternated; it prints a
# second table, img/sec per timed round and horovodcpp / DDP
# (--train-np, --train-args "extra train_bench.py options").
#
# It builds only `cmake --build BUILD --target allreduce_bench backend_bench
# gloo_allreduce_bench hvdrun` (and _core, the Python module, for --train on;
# configure BUILD first), and installs Debian's python3-torch when
# /usr/bin/python3 cannot import torch (as root; else the torch column and
# the training table are "n/a").
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build="$root/build"
out=""
nps="2 4"
sizes="4,64K,1M,16M,64M"
warmup=5
iters=20
run_timeout=300  # seconds, per benchmark run
train=on
train_np=2
train_args=""

usage() {
  sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//'
  exit "${1:-2}"
}
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --build) build=$(cd "$2" && pwd); shift 2 ;;
    --np) nps=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --train) train=$2; shift 2 ;;
    --train-np) train_np=$2; shift 2 ;;
    --train-args) train_args=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "run_peers.sh: unknown option $1" >&2; usage ;;
  esac
done
say() { echo "run_peers: $*" >&2; }

[ -f "$build/CMakeCache.txt" ] || {
  say "$build is not configured: cmake -S $root -B $build -DCMAKE_BUILD_TYPE=Release"
  exit 2
}
case "$train" in on|off) ;; *) say "--train on|off, not $train"; usage ;; esac
targets=(allreduce_bench backend_bench gloo_allreduce_bench hvdrun)
[ "$train" = on ] && targets+=(_core)
say "building in $build"
cmake --build "$build" -j2 --target "${targets[@]}" >&2 || {
  say "build failed"
  exit 1
}
hvdrun="$build/runner/hvdrun"
bench="$build/bench/allreduce_bench"
backend_bench="$build/bench/backend_bench"
gloo_bench="$build/bench/gloo_allreduce_bench"
python=/usr/bin/python3

have_torch=1
if ! "$python" -c 'import torch, torch.distributed' 2>/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    say "installing python3-torch (Debian) for $python"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-torch >&2 ||
      have_torch=0
    "$python" -c 'import torch, torch.distributed' 2>/dev/null || have_torch=0
  else
    have_torch=0
  fi
  [ "$have_torch" = 1 ] || say "no torch for $python (apt-get install python3-torch as root): torch column n/a"
fi

common=(--sizes "$sizes" --warmup "$warmup" --iters "$iters")
logs=$(mktemp -d /tmp/run_peers.XXXXXX)

# N copies of a command with RANK/SIZE/WORLD_SIZE set; rank 0's stdout to $1.
# Fails if any rank fails.
run_ranks() {
  local log=$1 n=$2
  shift 2
  local pids=() r rc=0
  for ((r = 0; r < n; ++r)); do
    if [ "$r" = 0 ]; then
      RANK=$r SIZE=$n WORLD_SIZE=$n timeout "$run_timeout" "$@" >"$log" 2>"$log.err.$r" &
    else
      RANK=$r SIZE=$n WORLD_SIZE=$n timeout "$run_timeout" "$@" >/dev/null 2>"$log.err.$r" &
    fi
    pids+=($!)
  done
  for r in "${pids[@]}"; do wait "$r" || rc=1; done
  return $rc
}

# run NAME NP command...: runs it, keeps its output as $logs/NAME.npNP.
run() {
  local name=$1 n=$2
  shift 2
  local log="$logs/$name.np$n"
  say "np $n: $name ($(cut -d' ' -f1-3 /proc/loadavg) load)"
  if [ "$name" = gloo ] || [ "$name" = torch ]; then
    run_ranks "$log" "$n" "$@"
  else
    timeout "$run_timeout" "$@" >"$log" 2>"$log.err"
  fi || { say "np $n: $name FAILED (see $log*)"; echo FAILED >>"$log"; }
}

started=$(date -u '+%Y-%m-%d %H:%M UTC')
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for n in $nps; do
  run hvd_shm "$n" "$hvdrun" -np "$n" --mpi "$bench" --mpi-baseline off "${common[@]}"
  run shm_path "$n" "$hvdrun" -np "$n" --mpi "$backend_bench" "${common[@]}"
  run gloo_mode "$n" "$hvdrun" -np "$n" --gloo "$bench" --mpi-baseline off "${common[@]}"
  run hvd_mpi "$n" env HOROVODCPP_SHM=0 "$hvdrun" -np "$n" --mpi "$bench" --mpi-baseline off \
    "${common[@]}"
  run hvd_gloo "$n" env HOROVODCPP_SHM=0 "$hvdrun" -np "$n" --gloo "$bench" --mpi-baseline off \
    "${common[@]}"
  # Launched by hvdrun --mpi too, so both MPI columns take the same Open
  # MPI path (hvdrun's transport flags; --verbose shows them).
  run mpi "$n" "$hvdrun" -np "$n" --mpi "$bench" --mpi-baseline only "${common[@]}"
  store=$(mktemp -d "$logs/gloo_store.XXXXXX")
  run gloo "$n" "$gloo_bench" --store "$store" "${common[@]}"
  if [ "$have_torch" = 1 ]; then
    store=$(mktemp -d "$logs/torch_store.XXXXXX")
    run torch "$n" "$python" "$here/torch_allreduce_bench.py" --init "file://$store/init" \
      "${common[@]}"
  else
    echo "no torch" >"$logs/torch.np$n"
  fi
done

# The training benchmark (bench/train_bench.py), with the horovodcpp package
# of this build (BUILD/python, as the Python tests use it).
train_report="training benchmark: off (--train off)"
if [ "$train" = on ]; then
  if [ "$have_torch" = 1 ]; then
    train_cmd=("$python" "$here/train_bench.py" --hvdrun "$hvdrun" --pythonpath "$build/python"
      --np "$train_np" --logs "$logs/train" --out "$logs/train.md")
    # shellcheck disable=SC2206  # word splitting of --train-args is wanted
    train_cmd+=($train_args)
    say "training: ${train_cmd[*]} ($(cut -d' ' -f1-3 /proc/loadavg) load)"
    echo "${train_cmd[*]}" >"$logs/train.cmd"
    "${train_cmd[@]}" >"$logs/train.out" 2>"$logs/train.err" || {
      say "training benchmark FAILED (see $logs/train*)"
      echo FAILED >>"$logs/train.np$train_np"
    }
    train_report=$(cat "$logs/train.md" 2>/dev/null || echo "training benchmark FAILED")
    train_report="$train_report
command: ${train_cmd[*]}"
  else
    train_report="training benchmark: n/a (no torch for $python)"
  fi
fi
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# "bytes time_us busbw" for every data row of one output. Launcher prefixes
# ("[1,0]<stdout>:", "[0]<stdout>: ") are stripped. allreduce_bench rows:
# horovodcpp time/busbw in fields 6/8, raw MPI in 10/12; the peers: 6/8.
rows() {
  local file=$1 which=$2
  [ -f "$file" ] || return 0
  sed -E 's/^\[[0-9,]+\]<std(out|err)>: ?//' "$file" | awk -v which="$which" '
    /^ +[0-9]+ / {
      if (which == "mpi") print $1, $10, $12; else print $1, $6, $8
    }'
}

table=$(
  for n in $nps; do
    rows "$logs/hvd_shm.np$n" hvd | sed "s/^/$n hvd_shm /"
    rows "$logs/shm_path.np$n" peer | sed "s/^/$n shm_path /"
    rows "$logs/gloo_mode.np$n" hvd | sed "s/^/$n gloo_mode /"
    rows "$logs/hvd_mpi.np$n" hvd | sed "s/^/$n hvd_mpi /"
    rows "$logs/hvd_gloo.np$n" hvd | sed "s/^/$n hvd_gloo /"
    rows "$logs/mpi.np$n" mpi | sed "s/^/$n mpi /"
    rows "$logs/gloo.np$n" peer | sed "s/^/$n gloo /"
    rows "$logs/torch.np$n" peer | sed "s/^/$n torch /"
  done | awk -v nps="$nps" -v sizes_in="$sizes" '
    function human(b) {
      if (b >= 1048576 && b % 1048576 == 0) return (b / 1048576) " MiB"
      if (b >= 1024 && b % 1024 == 0) return (b / 1024) " KiB"
      return b " B"
    }
    function num(x) { return x != "" && x != "-" && x + 0 > 0 }
    function cell(k, col) {
      if (!num(t[k, col])) return "-"
      return lat[k] ? sprintf("%.1f", t[k, col]) : sprintf("%.3f", bw[k, col])
    }
    # horovodcpp over the peer: busbw ratio, or peer time / horovodcpp time.
    function ratio(k, a, b) {
      if (!num(t[k, a]) || !num(t[k, b])) return "-"
      return sprintf(t[k, b] / t[k, a] < 0.1 ? "%.4f" : "%.2f", t[k, b] / t[k, a])
    }
    { k = $1 SUBSEP $3; t[k, $2] = $4; bw[k, $2] = $5
      if (!(k in seen)) { seen[k] = 1; order[++count] = k } }
    END {
      print "| size | np | horovodcpp-shm | shm data path | horovodcpp Gloo mode | horovodcpp-MPI | horovodcpp-Gloo | raw MPI | raw Gloo | torch.distributed (gloo) | shm / raw MPI | shm / raw Gloo | shm / torch | shm data path / raw MPI | horovodcpp-MPI / raw MPI | horovodcpp-Gloo / raw Gloo | Gloo mode / MPI mode (shm) | Gloo mode / raw Gloo |"
      print "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
      # Rows in size order, then np.
      m = split(nps, np_list, " ")
      for (i = 1; i <= count; ++i) { split(order[i], p, SUBSEP); size_of[p[2]] = 1 }
      ns = 0; for (s in size_of) sz[++ns] = s + 0
      for (i = 1; i <= ns; ++i) for (j = i + 1; j <= ns; ++j) if (sz[j] < sz[i]) { x = sz[i]; sz[i] = sz[j]; sz[j] = x }
      for (i = 1; i <= ns; ++i) for (j = 1; j <= m; ++j) {
        k = np_list[j] SUBSEP sz[i]
        if (!(k in seen)) continue
        lat[k] = sz[i] <= 4
        label = human(sz[i]) (lat[k] ? " (latency, us)" : "")
        printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", label, np_list[j],
          cell(k, "hvd_shm"), cell(k, "shm_path"), cell(k, "gloo_mode"), cell(k, "hvd_mpi"),
          cell(k, "hvd_gloo"), cell(k, "mpi"), cell(k, "gloo"), cell(k, "torch"),
          ratio(k, "hvd_shm", "mpi"), ratio(k, "hvd_shm", "gloo"), ratio(k, "hvd_shm", "torch"),
          ratio(k, "shm_path", "mpi"), ratio(k, "hvd_mpi", "mpi"), ratio(k, "hvd_gloo", "gloo"),
          ratio(k, "gloo_mode", "hvd_shm"), ratio(k, "gloo_mode", "gloo")
      }
    }'
)

torch_version=$([ "$have_torch" = 1 ] && "$python" -c 'import torch; print(torch.__version__)' || echo n/a)
report=$(
  echo "horovodcpp next to its peers: allreduce, float32, Sum, in place; warmup $warmup, iters $iters (fewer at big sizes, as allreduce_bench --auto-iters)"
  echo "date: $started; host: $(hostname), $(nproc) cores; load average (1/5/15 min) before: $load_before, after: $load_after"
  echo "horovodcpp $(sed -nE 's/.*# horovodcpp ([^ ]+) allreduce benchmark.*/\1/p' "$logs"/hvd_*.np* 2>/dev/null | head -1) (shm: hvdrun --mpi; Gloo mode: hvdrun --gloo; both negotiate through shared memory; MPI/Gloo: HOROVODCPP_SHM=0), HOROVODCPP_CYCLE_TIME=${HOROVODCPP_CYCLE_TIME:-unset (1 ms)}; $(mpirun --version 2>/dev/null | head -1); Gloo $(dpkg-query -W -f='${Version}' libgloo0 2>/dev/null || echo '?'); torch $torch_version"
  echo "columns: busbw in GB/s (nccl-tests: size/time * 2(n-1)/n); 4 B row: time in us. Ratios: horovodcpp busbw / peer busbw (4 B: peer time / horovodcpp time); above 1 = horovodcpp faster"
  echo
  echo "$table"
  echo
  echo "$train_report"
)
echo "$report"
[ -n "$out" ] && echo "$report" >"$out" && say "table written to $out"
say "raw outputs in $logs"
grep -l FAILED "$logs"/*.np* >/dev/null 2>&1 && { say "some runs failed"; exit 1; }
exit 0
