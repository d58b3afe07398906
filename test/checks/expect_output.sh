#!/usr/bin/env bash
# expect_output.sh PATTERN COMMAND [ARGS...]: runs COMMAND, passing its
# output through, and fails unless it exits 0 AND a line of its output
# matches the extended regular expression PATTERN. (ctest's
# PASS_REGULAR_EXPRESSION alone ignores the exit status.)
set -u
if [ $# -lt 2 ]; then
  echo "usage: $0 PATTERN COMMAND [ARGS...]" >&2
  exit 2
fi
pattern=$1
shift
log=$(mktemp) || exit 1
trap 'rm -f "$log"' EXIT
"$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
  echo "expect_output.sh: the command exited with status $status" >&2
  exit "$status"
fi
if ! grep -Eq -- "$pattern" "$log"; then
  echo "expect_output.sh: no output line matches: $pattern" >&2
  exit 1
fi
