# Sourced by the end-to-end scripts: PASS/FAIL lines, the failed check's
# log tail, and the summary that sets the script's exit status.
PASSED=0
FAILED=0

report() {  # name why log: passed when `why` is empty
  if [ -z "$2" ]; then
    PASSED=$((PASSED + 1))
    echo "PASS $1"
  else
    FAILED=$((FAILED + 1))
    echo "FAIL $1: $2"
    sed 's/^/    | /' "$3" | tail -n 40
  fi
}

report_pass() {  # name detail: passed, saying what was seen
  PASSED=$((PASSED + 1))
  echo "PASS $1 ($2)"
}

# Runs each command (checks that call report) in a subshell of its own, side
# by side, then prints their lines command by command and adds up their
# counts: for checks that mostly wait. DIR holds their output meanwhile.
side_by_side() {  # dir command...
  local dir=$1 command i=0 pids=() counts
  shift
  for command in "$@"; do
    (PASSED=0 FAILED=0; eval "$command"; echo "$PASSED $FAILED" >"$dir/side-$i.counts") >"$dir/side-$i.out" 2>&1 &
    pids+=($!)
    i=$((i + 1))
  done
  wait "${pids[@]}"
  for ((i = 0; i < $#; i++)); do
    cat "$dir/side-$i.out"
    counts=$(cat "$dir/side-$i.counts" 2>/dev/null || echo "0 1")
    PASSED=$((PASSED + ${counts% *}))
    FAILED=$((FAILED + ${counts#* }))
  done
}

summary() {
  echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" -eq 0 ]
}
