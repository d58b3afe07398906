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

summary() {
  echo "$PASSED passed, $FAILED failed"
  [ "$FAILED" -eq 0 ]
}
