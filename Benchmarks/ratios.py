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

The view engine's measures (VIEW_RATIOS) divide other pairs: a Canopy workload by another Canopy workload (a 1M-row
view against a 10k-row one, population against a plain bulk insert), and GRDB's observed update by Canopy's — that
line's target is a minimum ("Canopy at least 30x faster"), written `target=>=30` (likewise the one-group window
observation and the bulk insert against GRDB's with two indexes). `view-entry-bytes` is not a time:
the bytes the view's LMDB tables take per entry beyond its key, which the population benchmark writes to a file.

Prints a table of times per operation, then, as the last lines, one line per measure:
    <name> ratio=<numerator/denominator> target=<target>
Exits with status 1 when a benchmark of a pair is missing from the results.
"""

import json
import os
import re
import sys
import tempfile

# (workload, operations per iteration, target, whether the encode time joins the denominator).
# Operations per iteration follow Benchmarks/StoreBenchmarks (Workload.readsPerIteration, rowCount,
# smallTransactionsPerIteration); they only scale the per-operation figures, not the ratios.
WORKLOADS = [
    ("point-read-cache-miss", 10_000, "3.0", False),
    ("point-read-cache-hit", 10_000, "0.5", False),
    ("bulk-insert", 100_000, "1.5", True),
    ("small-write-txn-full", 1_000, "1.5", False),
    ("small-write-txn-metadata-only", 1_000, "1.5", False),
    ("small-write-txn-none", 1_000, "2.0", False),
    ("full-scan", 100_000, "10", False),
]

# (line name, numerator benchmark, denominator benchmark, operations per iteration of each, target). Where an issue
# states a line's target (issue 19's table: bulk-insert-2-views <= 2.5, update-2-views-observed-none <= 5,
# observed-window-grdb-vs-canopy >= 10), the issue is the contract and the target here is its value.
VIEW_RATIOS = [
    ("bulk-insert-2-views", "bulk-insert-2-views canopy", "bulk-insert-2-views raw", (100_000, 100_000), "2.5"),
    # What the records' CRC32C checksums cost: the same workload through Canopy with them / without them (a store
    # opened with the SPI switch DatabaseOptions.valueChecksums off). Issue 15: within 5%.
    ("checksum-cost-point-read", "point-read-cache-miss canopy", "point-read-cache-miss no-checksums", (10_000, 10_000), "1.05"),
    ("checksum-cost-bulk-insert", "bulk-insert canopy", "bulk-insert no-checksums", (100_000, 100_000), "1.05"),
    ("update-2-views-observed-none", "update-2-views-observed-none canopy", "update-2-views-observed-none raw", (100, 100), "5.0"),
    # The same with the opt-in write map (DatabaseOptions.writeMap) against the same raw commits: informs only.
    ("update-2-views-observed-none-writemap", "update-2-views-observed-none-writemap canopy", "update-2-views-observed-none raw", (100, 100), "report"),
    ("update-2-views-observed-full", "update-2-views-observed-full canopy", "update-2-views-observed-full raw", (10, 10), "3.0"),
    # GRDB / Canopy: the full list observed (every row of a 5-group view), one group's first 50 rows observed, and
    # a bulk insert into a table with the two views' indexes against the bulk insert with the two views.
    ("grdb-vs-canopy-update", "observed-update-vs-grdb grdb", "observed-update-vs-grdb canopy", (5, 5), ">=30"),
    ("observed-window-grdb-vs-canopy", "observed-window-vs-grdb grdb", "observed-window-vs-grdb canopy", (10, 10), ">=10"),
    ("bulk-insert-grdb-vs-canopy", "bulk-insert-grdb grdb", "bulk-insert-2-views canopy", (100_000, 100_000), ">=2.0"),
    # Reads against GRDB: every row decoded into a struct (a Codable record cursor against the typed scan), and a
    # primary-key fetch of a decoded record against a typed read past the cache (ReadPeerBenchmarks.swift).
    ("full-scan-grdb-vs-canopy", "full-scan-grdb grdb", "full-scan canopy", (100_000, 100_000), ">=3.0"),
    ("point-read-grdb-vs-canopy", "point-read-grdb grdb", "point-read-cache-miss canopy", (10_000, 10_000), ">=5.0"),
    # The observed one-row update with eight views against the same with two: (ratio - 1) / 6 is what each further
    # view costs, as a share of the two-view update (informs only).
    ("update-8-views-vs-2-views", "update-8-views canopy", "update-2-views-observed-none canopy", (100, 100), "report"),
    ("changeset-10k-vs-300", "changeset-group-10000 canopy", "changeset-group-300 canopy", (1, 1), "1.2"),
    ("changeset-flexible-10k-vs-300", "changeset-group-flexible-10000 canopy", "changeset-group-flexible-300 canopy", (1, 1), "1.2"),
    # What the flexible window and the drawing dependencies add to a changeset (same 300-row group): informs only.
    ("changeset-flexible-vs-plain-300", "changeset-group-flexible-300 canopy", "changeset-group-300 canopy", (1, 1), "report"),
    ("insert-1m-vs-10k", "insert-in-view-1m canopy", "insert-in-view-10k canopy", (200, 200), "2.0"),
    # Moving a row of a user-ordered list, both lists opened as an app opens them (synced, out of the page cache);
    # and, reported only, both right after the process filled them (at 1M rows every small commit then pays the
    # kernel's walk of the large page-cache folios the fill left: the manual view's DocC article).
    ("manual-move-1m-vs-10k", "manual-move-1m canopy", "manual-move-10k canopy", (200, 200), "2.0"),
    ("manual-move-after-fill-1m-vs-10k", "manual-move-after-fill-1m canopy", "manual-move-after-fill-10k canopy", (200, 200), "report"),
    # A view whose rows are in many groups: inserting a row that lands in 3 groups against one in 1 group of a
    # one-group view (10k rows each), and the changeset and 1M-vs-10k lines above for such a view.
    ("multigroup-insert-vs-single", "multigroup-insert-3 canopy", "multigroup-insert-1 canopy", (200, 200), "2.5"),
    ("changeset-multigroup-10k-vs-300", "changeset-multigroup-group-10000 canopy", "changeset-multigroup-group-300 canopy", (1, 1), "1.2"),
    ("insert-multigroup-1m-vs-10k", "insert-in-multigroup-view-1m canopy", "insert-in-multigroup-view-10k canopy", (200, 200), "2.0"),
    # Full-text search: GRDB's FTS5 table against CanopySearch indexing the same 100k short texts in one transaction,
    # and answering the same 1,000 queries (prefix and two-term, top 20 by rank); the queries over 1M texts vs 100k.
    ("search-index-grdb-fts5-vs-canopy", "search-index grdb", "search-index canopy", (100_000, 100_000), ">=1.0"),
    ("search-query-grdb-fts5-vs-canopy", "search-query-100k grdb", "search-query-100k canopy", (1_000, 1_000), ">=1.0"),
    ("search-query-1m-vs-100k", "search-query-1m canopy", "search-query-100k canopy", (1_000, 1_000), "2.0"),
    ("viewport-render-1m-vs-1k", "viewport-1m canopy", "viewport-1k canopy", (20, 20), "1.5"),
    ("terminal-apply-1m-vs-1k", "terminal-apply-1m canopy", "terminal-apply-1k canopy", (1, 1), "1.5"),
    # The batch of an animated array (10k items, ~1% edits, by identity) against Swift's CollectionDifference.
    ("array-diff-10k", "array-diff-10k canopy", "array-diff-10k swift", (1, 1), "2.0"),
    ("population-1m", "population-1m view", "population-1m insert", (1_000_000, 1_000_000), "1.5"),
    # Registering an unchanged, current 1M-row view (a read: the page directory loaded and a few hundred entries
    # recomputed by the closures) against the rebuild it replaces: informs only.
    ("registration-check-1m-vs-population", "registration-check-1m canopy", "population-1m view", (1, 1), "report"),
    # The durable change feed: a 1-row commit with the feed's values kept against the same without the feed, and the
    # feed of 100k commits read through Database.readChanges against a raw cursor over its table (informs only).
    ("feed-commit-overhead", "feed-commit feed", "feed-commit plain", (1_000, 1_000), "1.2"),
    ("feed-read-100k", "feed-read-100k canopy", "feed-read-100k raw", (100_000, 100_000), "report"),
    # A typed migration step over 1M rows against a bulk rewrite of the same rows from values in memory (10,000 per commit).
    ("migration-1m-vs-bulk", "migration-1m step", "migration-1m bulk", (1_000_000, 1_000_000), "1.5"),
]

ENTRY_BYTES_REPORT = os.path.join(tempfile.gettempdir(), "canopy-bench-view-entry-bytes.txt")
# Iterations longer than about 2 s are missing from the JMH export (their throughput rounds to 0): those benchmarks
# append "<name> <microseconds>" lines here, and the median stands in for p50.
LONG_TIMINGS_REPORT = os.path.join(tempfile.gettempdir(), "canopy-bench-long-timings.txt")


def long_timings():
    """Maps benchmark name to the median of its recorded iteration times, in microseconds."""
    samples = {}
    try:
        with open(LONG_TIMINGS_REPORT, encoding="utf-8") as file:
            for line in file:
                name, _, value = line.strip().rpartition(" ")
                if name:
                    samples.setdefault(name, []).append(float(value))
    except OSError:
        return {}
    return {name: sorted(values)[len(values) // 2] for name, values in samples.items()}

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
    long = long_timings()

    def workload_us(name):
        """The JMH median, or the recorded median of a benchmark whose iterations dropped out of the export."""
        measured = p50(results[name], WALL_CLOCK) if name in results else None
        return measured if measured is not None else long.get(name)

    missing = [
        f"{workload} {side}"
        for workload, _, _, with_encode in WORKLOADS
        for side in ["canopy", "raw"] + (["encode"] if with_encode else [])
        if workload_us(f"{workload} {side}") is None
    ]
    if missing:
        print("error: no results for " + ", ".join(missing) + " in " + arguments[0], file=sys.stderr)
        return 1

    lines = []
    print()
    print(f"{'workload (p50 per operation)':32} {'canopy us':>11} {'raw us':>10} {'encode us':>10}"
          f" {'canopy mallocs':>15} {'raw mallocs':>12} {'iterations c/r':>15}")
    for workload, operations, target, with_encode in WORKLOADS:
        canopy = results.get(f"{workload} canopy", {})
        raw = results.get(f"{workload} raw", {})
        canopy_us = workload_us(f"{workload} canopy")
        raw_us = workload_us(f"{workload} raw")
        encode_us = workload_us(f"{workload} encode") if with_encode else 0.0
        ratio = canopy_us / (raw_us + encode_us)
        mallocs = [p50(canopy, MALLOCS), p50(raw, MALLOCS)]
        malloc_text = [f"{m / operations:.2f}" if m is not None else "-" for m in mallocs]
        print(f"{workload:32} {canopy_us / operations:11.3f} {raw_us / operations:10.3f}"
              f" {(f'{encode_us / operations:.3f}' if with_encode else '-'):>10}"
              f" {malloc_text[0]:>15} {malloc_text[1]:>12}"
              f" {canopy.get('measurementIterations', '-'):>7}/{raw.get('measurementIterations', '-'):<7}")
        lines.append(f"{workload} ratio={ratio:.2f} target={target}")
    print()
    print(f"{'measure (p50 per operation)':32} {'numerator us':>13} {'denominator us':>15}  numerator / denominator")

    def median_us(name):
        if name in long:
            return long[name]
        return p50(results[name], WALL_CLOCK) if name in results else None

    for name, numerator, denominator, (num_ops, den_ops), target in VIEW_RATIOS:
        if median_us(numerator) is None or median_us(denominator) is None:
            print(f"error: no results for {numerator} or {denominator}", file=sys.stderr)
            return 1
        num_us = median_us(numerator) / num_ops
        den_us = median_us(denominator) / den_ops
        print(f"{name:32} {num_us:13.3f} {den_us:15.3f}  {numerator} / {denominator}")
        lines.append(f"{name} ratio={num_us / den_us:.2f} target={target}")
    try:
        with open(ENTRY_BYTES_REPORT, encoding="utf-8") as file:
            per_entry, entries, total = file.read().split()
        print(f"view entries: {entries}, view tables {int(total) / 1e6:.1f} MB")
        lines.append(f"view-entry-bytes ratio={float(per_entry):.1f} target=40")
    except (OSError, ValueError):
        print(f"error: no view-entry size in {ENTRY_BYTES_REPORT}", file=sys.stderr)
        return 1
    print()
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
