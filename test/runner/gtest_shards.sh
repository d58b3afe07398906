#!/usr/bin/env bash
# Runs a GoogleTest command as N shards side by side (GTEST_TOTAL_SHARDS,
# GTEST_SHARD_INDEX), for tests that mostly wait, such as fault scenarios
# waiting out a peer's timeout. Prints each shard's output in turn; fails
# if any shard fails, or if no test ran at all (a filter that matches
# nothing).
#   gtest_shards.sh N COMMAND...
set -u
shards=${1:?usage: gtest_shards.sh N COMMAND...}
shift
work=$(mktemp -d /tmp/hvd_gtest_shards.XXXXXX)
trap 'rm -rf "$work"' EXIT
pids=()
for ((i = 0; i < shards; i++)); do
  GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i "$@" >"$work/$i.out" 2>&1 &
  pids+=($!)
done
failed=0
for ((i = 0; i < shards; i++)); do
  wait "${pids[$i]}"
  rc=$?
  echo "---- shard $i of $shards: exit code $rc"
  cat "$work/$i.out"
  [ "$rc" -eq 0 ] || failed=1
done
if ! grep -qE '\[ +OK \]' "$work"/*.out; then
  echo "no test ran"
  failed=1
fi
exit "$failed"
