#!/usr/bin/env bash
# Sets up and builds (scripts/setup.sh), then runs every test with ctest:
# unit tests, the multi-rank suites under mpirun with 1-4 ranks, the
# install check. Exits non-zero if any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --tests
cd "${HVD_BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)"
