#!/usr/bin/env bash
# ZeRO sharding against the unsharded DistributedOptimizer and torch's
# ZeroRedundancyOptimizer (on gloo and on the horovodcpp backend): a ~100M
# parameter MLP with Adam, every variant in its own job, in turns, ROUNDS
# times, at each number of ranks. Prints one table per number of ranks: the
# best step time of each variant and its ratio to DistributedOptimizer's
# (above 1: faster), the optimizer state per rank (and its share of the
# whole), and the peak resident memory above the built model's (largest over
# the ranks, median over the rounds).
#
# usage: sharding_bench.sh HVDRUN PYTHON [RANKS...]   (default 2 4)
#   PYTHON: a PyTorch the horovodcpp backend supports (setup.sh --tests'
#   ~/.cache/horovodcpp/torch-venv/bin/python); PYTHONPATH: the package.
#   ROUNDS (3), ARGS (more sharding_bench.py arguments, e.g. --device cuda),
#   VARIANTS (all five) from the environment.
set -euo pipefail
HVDRUN=${1:?usage: sharding_bench.sh HVDRUN PYTHON [RANKS...]}
PYTHON=${2:?usage: sharding_bench.sh HVDRUN PYTHON [RANKS...]}
shift 2
RANKS=${*:-2 4}
ROUNDS=${ROUNDS:-3}
VARIANTS=${VARIANTS:-distributed zero1 zero2 torch_zero_gloo torch_zero_horovodcpp}
HERE=$(dirname "$(readlink -f "$0")")
LOG=$(mktemp /tmp/sharding_bench.XXXXXX)
trap 'rm -f "$LOG"' EXIT

echo "# sharding_bench: $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg), rounds $ROUNDS, ${ARGS:-defaults}"
for np in $RANKS; do
  for round in $(seq "$ROUNDS"); do
    for variant in $VARIANTS; do
      SHARDING_BENCH_PORT=$((29600 + RANDOM % 1000)) "$HVDRUN" -np "$np" "$PYTHON" \
        "$HERE/sharding_bench.py" --variant "$variant" ${ARGS:-} 2>&1 |
        grep -o "variant=.*" >>"$LOG" || { echo "$variant at $np ranks failed" >&2; exit 1; }
    done
  done
done
head -n1 "$LOG" | sed 's/^.* params=\([0-9]*\) .* torch=\([^ ]*\) device=\(.*\)$/# \1 parameters, torch \2, \3/'
awk '
  function field(name,   i) { for (i = 1; i <= NF; ++i) if (index($i, name "=") == 1) return substr($i, length(name) + 2) }
  function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; ++i) for (j = i + 1; j <= n; ++j) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return a[int((n + 1) / 2)]
  }
  {
    key = field("ranks") SUBSEP field("variant")
    if (!(key in best) || field("step_ms") + 0 < best[key]) best[key] = field("step_ms") + 0
    peaks[key] = peaks[key] " " field("peak_above_model_mib")
    state[key] = field("state_mib"); whole[key] = field("whole_state_mib")
    if (!(field("ranks") in seen)) { seen[field("ranks")] = 1; order[++n] = field("ranks") }
    if (!(field("variant") in vseen)) { vseen[field("variant")] = 1; vorder[++m] = field("variant") }
  }
  END {
    for (i = 1; i <= n; ++i) {
      r = order[i]
      printf "\n## %s ranks\n| variant | step | vs DistributedOptimizer | optimizer state per rank | peak above the model |\n|---|---|---|---|---|\n", r
      for (j = 1; j <= m; ++j) {
        k = r SUBSEP vorder[j]
        if (!(k in best)) continue
        ratio = (r SUBSEP "distributed") in best ? sprintf("%.2fx", best[r SUBSEP "distributed"] / best[k]) : "-"
        printf "| %s | %.0f ms | %s | %.0f MiB (%.3f of the whole) | %.0f MiB |\n", vorder[j], best[k], ratio, state[k], state[k] / whole[k], median(peaks[k])
      }
    }
  }' "$LOG"
