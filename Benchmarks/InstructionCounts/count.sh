#!/bin/sh
# Instructions of one StoreBenchmarks workload through Canopy, counted by callgrind (only the measured part):
#   Benchmarks/InstructionCounts/count.sh WORKLOAD [ITERATIONS] [OUTPUT]
# Prints the total; OUTPUT (default /tmp/callgrind.WORKLOAD.out) is for `callgrind_annotate --inclusive=yes`.
# Needs valgrind (apt-get install valgrind). Builds the driver in release first.
set -eu
cd "$(dirname "$0")/.."
workload=${1:?usage: count.sh WORKLOAD [ITERATIONS] [OUTPUT]}
iterations=${2:-1}
output=${3:-/tmp/callgrind.$workload.out}
swift build -c release --product InstructionCounts >/dev/null
# Valgrind 3.19 gives up on the DWARF 5 debug info of the C targets: count a copy without it (symbols stay).
binary="$output.bin"
strip --strip-debug -o "$binary" .build/release/InstructionCounts
valgrind --tool=callgrind --callgrind-out-file="$output" --toggle-collect='*canopy_measured_workload*' \
    "$binary" "$workload" "$iterations" 2>&1 | grep -E "Collected|Error|error" || true
rm -f "$binary"
echo "$workload x$iterations: $(callgrind_annotate "$output" | awk '/PROGRAM TOTALS/ { print $1 }') instructions"
