#!/usr/bin/env bash
# Checks that the raw Swift baseline is honest: builds and runs the plain C program
# shared/reference/lmdb-c-baseline/lmdb_bench.c (N = 100k), runs the raw Swift benchmarks of this package, and prints
# their microseconds per operation side by side (within about 1.2x is the bar, DESIGN.md section 7).
#
# Usage (from anywhere): bash Benchmarks/c-baseline.sh [REPS]   — C_BASELINE_SOURCE overrides the C file's path.
set -euo pipefail
cd "$(dirname "$0")"
reps="${1:-3}"
source_file="${C_BASELINE_SOURCE:-../../shared/reference/lmdb-c-baseline/lmdb_bench.c}"
work="$(mktemp -d "${TMPDIR:-/tmp}/canopy-c-baseline-XXXXXX")"
trap 'rm -rf "$work"' EXIT

gcc -O2 -o "$work/lmdb_bench" "$source_file" -llmdb
"$work/lmdb_bench" 100000 "$reps" "$work/db" | tee "$work/c-output.txt"

rm -f .build/c-baseline-results/Current_run.jmh.json
swift package --allow-writing-to-package-directory benchmark --no-progress --format jmh --filter '.* raw' \
    --path .build/c-baseline-results
python3 ratios.py --c-baseline "$work/c-output.txt" .build/c-baseline-results/Current_run.jmh.json
