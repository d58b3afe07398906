#!/usr/bin/env bash
# python_path_bench.sh: the path torch users take (horovodcpp.torch from
# Python) next to the C++ path and torch.distributed's gloo, launch after
# launch, so that the spread between launches shows.
#
#   bench/python_path_bench.sh [--build DIR] [--launches 8] [--np 2] [--mode mpi|gloo]
#                              [--python /usr/bin/python3] [--burst-elements 1|N|resnet50]
#
# Each launch runs, one after the other:
#   C++ 4 B      hvdrun -np N --MODE allreduce_bench --sizes 4 --iters 20000 (hvd::allreduce)
#   Python       hvdrun -np N --MODE PYTHON python_api_bench.py: hvd.allreduce_ and
#                hvd.allreduce of 1 element, a burst of 161 tensors (as many as
#                ResNet-50's gradients; --burst-elements, default 1: the
#                per-tensor cost) with allreduce_async_ each, then synchronize each
#   C++ burst    hvdrun -np N --MODE fusion_bench --elements-list <the same 161 sizes>
#   torch gloo   N x torch_allreduce_bench.py, 4 B (dist.all_reduce on gloo)
# It prints a row per launch, then the median of each column, the largest
# launch over the median, and the ratios Python / C++.
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
build="$here/../build" launches=8 np=2 mode=mpi python=/usr/bin/python3 burst=1
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --launches) launches=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --burst-elements) burst=$2; shift 2 ;;
    *) echo "usage: python_path_bench.sh [--build DIR] [--launches N] [--np N] [--mode mpi|gloo] [--python PY] [--burst-elements N]" >&2
       exit 2 ;;
  esac
done
hvdrun="$build/runner/hvdrun"
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
elements=$("$python" "$here/python_api_bench.py" --elements --burst-elements "$burst")
strip() { sed -E 's/^\[[0-9,]+\]<std(out|err)>: ?//'; }
free_port() { "$python" -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])'; }

echo "# python_path_bench: $np ranks, $mode mode, $launches launches, $(nproc) hardware threads," \
     "load $(cut -d' ' -f1 /proc/loadavg), $($python -c 'import torch; print("torch", torch.__version__)')"
echo "# burst: 161 tensors of $burst element(s)"
echo "| launch | C++ 4 B (us) | hvd.allreduce_ (us) | hvd.allreduce (us) | C++ burst (ms) | Python burst (ms) | torch gloo 4 B (us) |"
echo "|---|---|---|---|---|---|---|"
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for ((i = 1; i <= launches; i++)); do
  cpp=$("$hvdrun" -np "$np" --"$mode" "$build/bench/allreduce_bench" --sizes 4 --iters 20000 \
    --auto-iters off --mpi-baseline off 2>/dev/null | strip | awk '/^ +4 / {print $6; exit}')
  read -r api api_out py_burst < <("$hvdrun" -np "$np" --"$mode" "$python" \
    "$here/python_api_bench.py" --burst-elements "$burst" 2>/dev/null | strip | awk '/^python_api/ {
      for (f = 2; f <= NF; f++) { split($f, kv, "="); v[kv[1]] = kv[2] }
      print v["allreduce_us"], v["allreduce_out_us"], v["burst_ms"] }')
  cpp_burst=$("$hvdrun" -np "$np" --"$mode" "$build/bench/fusion_bench" --elements-list "$elements" \
    --steps 50 2>/dev/null | strip | sed -nE 's/.*: ([0-9.]+) ms\/step/\1/p')
  store=$(mktemp -u /tmp/torch_store.XXXXXX)
  for ((r = 0; r < np; r++)); do
    "$python" "$here/torch_allreduce_bench.py" --rank "$r" --size "$np" --init "file://$store" \
      --sizes 4 --iters 2000 --auto-iters off >"$store.$r" 2>&1 &
  done
  wait
  gloo=$(awk '/^ +4 / {print $6; exit}' "$store.0")
  rm -f "$store" "$store".*
  echo "| $i | $cpp | $api | $api_out | $cpp_burst | $py_burst | $gloo |"
  echo "$cpp $api $api_out $cpp_burst $py_burst $gloo" >>"$results"
done
awk '
  { for (c = 1; c <= NF; c++) v[c, NR] = $c; cols = NF; rows = NR }
  END {
    for (c = 1; c <= cols; c++) {
      n = 0; for (r = 1; r <= rows; r++) a[++n] = v[c, r]
      for (x = 1; x <= n; x++) for (y = x + 1; y <= n; y++) if (a[y] < a[x]) { t = a[x]; a[x] = a[y]; a[y] = t }
      med[c] = n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2; mx[c] = a[n]
    }
    printf "| median |"; for (c = 1; c <= cols; c++) printf " %.3g |", med[c]; print ""
    printf "| largest / median |"; for (c = 1; c <= cols; c++) printf " %.2f |", mx[c] / med[c]; print ""
    printf "\nhvd.allreduce_ / C++: %.2f; hvd.allreduce / C++: %.2f; Python burst / C++ burst: %.2f; torch gloo / hvd.allreduce: %.0f\n",
      med[2] / med[1], med[3] / med[1], med[5] / med[4], med[6] / med[3]
  }' "$results"
