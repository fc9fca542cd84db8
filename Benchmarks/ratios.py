#!/usr/bin/env python3
"""Turns one package-benchmark run (its JMH export) into Canopy-versus-raw-LMDB ratios.

Usage: python3 ratios.py RESULTS.jmh.json
       python3 ratios.py --c-baseline C_OUTPUT.txt RESULTS.jmh.json

With --c-baseline, compares the raw Swift baselines instead with the output of the C program
shared/reference/lmdb-c-baseline/lmdb_bench.c (see c-baseline.sh): the Swift baseline is honest when it runs within
about 1.2x of C.

Every workload ran in the same run as a pair of benchmarks, "<workload> canopy" and "<workload> raw" (the raw one
calls LMDB's C API directly, doing the same LMDB work). The ratio is the median (p50) wall-clock time of one
iteration through Canopy over the same through raw LMDB; both do the same number of operations per iteration, so it
is also the ratio of times per operation. For the bulk insert the denominator is raw LMDB plus the codec's own
encoding time ("bulk-insert encode"), so the ratio measures what Canopy adds beyond the codec.

Prints a table of times per operation, then, as the last lines, one line per workload:
    <name> ratio=<canopy/raw> target=<target>
Exits with status 1 when a benchmark of a pair is missing from the results.
"""

import json
import re
import sys

# (workload, operations per iteration, target, whether the encode time joins the denominator).
# Operations per iteration follow Benchmarks/StoreBenchmarks (Workload.readsPerIteration, rowCount,
# smallTransactionsPerIteration); they only scale the per-operation figures, not the ratios.
WORKLOADS = [
    ("point-read-cache-miss", 10_000, "3.0", False),
    ("point-read-cache-hit", 10_000, "0.5", False),
    ("bulk-insert", 100_000, "1.5", True),
    ("small-write-txn-full", 1_000, "1.5", False),
    ("small-write-txn-metadata-only", 1_000, "1.5", False),
    ("small-write-txn-none", 1_000, "1.5", False),
    ("full-scan", 100_000, "report", False),
]

WALL_CLOCK = "Time (wall clock)"
MALLOCS = "Malloc (total)"


def load(path):
    """Maps benchmark name ("bulk-insert canopy") to its JMH element."""
    with open(path, encoding="utf-8") as file:
        elements = json.load(file)
    results = {}
    for element in elements:
        # "package.benchmark.<target>.<name with spaces as underscores>"; our names have no underscores of their own.
        name = element["benchmark"].split(".", 3)[3].replace("_", " ")
        results[name] = element
    return results


def p50(element, metric):
    """The median of `metric` for one iteration: microseconds for times, a count for mallocs; None when absent."""
    secondary = element.get("secondaryMetrics") or {}
    if metric not in secondary:
        return None
    return float(secondary[metric]["scorePercentiles"]["50.0"])


# The C program's phase, the raw Swift benchmark doing the same work, and its operations per iteration.
C_PHASES = [
    ("get_rand", "point-read-cache-miss raw", 10_000),
    ("ins_rand", "bulk-insert raw", 100_000),
    ("scan", "full-scan raw", 100_000),
    ("txn_nosync", "small-write-txn-none raw", 1_000),
    ("txn_nometasync", "small-write-txn-metadata-only raw", 1_000),
    ("txn_sync", "small-write-txn-full raw", 1_000),
]


def compare_with_c(c_output_path, results):
    """Prints the C program's microseconds per operation next to the raw Swift baseline's."""
    c_us = {}
    with open(c_output_path, encoding="utf-8") as file:
        for line in file:
            match = re.match(r"^(\w+) \(.*?\)\s+([\d.]+)\s+(\d+)\s+([\d.]+)\s", line)
            if match:
                c_us[match.group(1)] = float(match.group(4))
    print()
    print(f"{'C phase':16} {'C us/op':>10}  {'Swift raw benchmark':36} {'Swift us/op':>11} {'Swift/C':>8}")
    status = 0
    for phase, benchmark, operations in C_PHASES:
        element = results.get(benchmark)
        if phase not in c_us or element is None:
            print(f"{phase:16} missing from the C output or the Swift results", file=sys.stderr)
            status = 1
            continue
        swift_us = p50(element, WALL_CLOCK) / operations
        print(f"{phase:16} {c_us[phase]:10.3f}  {benchmark:36} {swift_us:11.3f} {swift_us / c_us[phase]:8.2f}")
    return status


def main():
    arguments = sys.argv[1:]
    if len(arguments) == 3 and arguments[0] == "--c-baseline":
        return compare_with_c(arguments[1], load(arguments[2]))
    if len(arguments) != 1:
        print("\n".join(__doc__.strip().splitlines()[2:4]), file=sys.stderr)
        return 2
    results = load(arguments[0])
    missing = [
        f"{workload} {side}"
        for workload, _, _, with_encode in WORKLOADS
        for side in ["canopy", "raw"] + (["encode"] if with_encode else [])
        if f"{workload} {side}" not in results or p50(results[f"{workload} {side}"], WALL_CLOCK) is None
    ]
    if missing:
        print("error: no results for " + ", ".join(missing) + " in " + arguments[0], file=sys.stderr)
        return 1

    lines = []
    print()
    print(f"{'workload (p50 per operation)':32} {'canopy us':>11} {'raw us':>10} {'encode us':>10}"
          f" {'canopy mallocs':>15} {'raw mallocs':>12} {'iterations c/r':>15}")
    for workload, operations, target, with_encode in WORKLOADS:
        canopy = results[f"{workload} canopy"]
        raw = results[f"{workload} raw"]
        canopy_us = p50(canopy, WALL_CLOCK)
        raw_us = p50(raw, WALL_CLOCK)
        encode_us = p50(results[f"{workload} encode"], WALL_CLOCK) if with_encode else 0.0
        ratio = canopy_us / (raw_us + encode_us)
        mallocs = [p50(canopy, MALLOCS), p50(raw, MALLOCS)]
        malloc_text = [f"{m / operations:.2f}" if m is not None else "-" for m in mallocs]
        print(f"{workload:32} {canopy_us / operations:11.3f} {raw_us / operations:10.3f}"
              f" {(f'{encode_us / operations:.3f}' if with_encode else '-'):>10}"
              f" {malloc_text[0]:>15} {malloc_text[1]:>12}"
              f" {canopy['measurementIterations']:>7}/{raw['measurementIterations']:<7}")
        lines.append(f"{workload} ratio={ratio:.2f} target={target}")
    print()
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
