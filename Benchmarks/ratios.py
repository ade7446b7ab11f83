#!/usr/bin/env python3
"""Prints the results of one benchmark run and the performance targets they meet or miss.

Reads the Influx CSV that the benchmark harness exports (raw percentiles of every metric of every benchmark), so
that every ratio comes from one run:

    swift package --package-path Benchmarks --allow-writing-to-directory /tmp/defaults-bench \\
        benchmark --format influx --path /tmp/defaults-bench --no-progress
    python3 Benchmarks/ratios.py /tmp/defaults-bench/Current_run.influx.csv

Options: --results prints the table of every benchmark as well; --markdown prints both tables as Markdown (for
Docs/Performance.md). Exits with 0 whatever the outcome: a miss is a finding, not a failure of the script.

Standard library only.
"""

import argparse
import csv
import sys
from collections import defaultdict

# Operations per measured iteration of each benchmark target (its scaling factor): the harness exports raw values,
# which cover that many operations. Keep in step with `scalingFactor` in Benchmarks/Benchmarks/*/*.swift.
OPERATIONS_PER_ITERATION = {
    "Operations": 1_000, "Bulk": 1, "Sync": 1, "SyncOnOff": 1, "SyncOnOffBefore": 1, "Update": 1,
}

TIME = "Time(wallclock)"
MALLOCS = "Malloc(total)"


def load(path):
    """{benchmark name: {"target": str, "samples": int, metric: {percentile: raw value}}}"""
    results = defaultdict(lambda: defaultdict(dict))
    with open(path, newline="") as file:
        rows = csv.reader(line for line in file if not line.startswith("#"))
        header = next(rows)
        column = {name: index for index, name in enumerate(header)}
        for row in rows:
            if len(row) < len(header):
                continue
            target = row[column["measurement"]]
            name = row[column["test"]].strip('"')
            metric = row[column["metric"]]
            percentile = float(row[column["percentile"]])
            value = float(row[column["value"]])
            entry = results[name]
            if target not in OPERATIONS_PER_ITERATION:
                sys.exit(f"unknown benchmark target {target!r}: add its scaling factor to OPERATIONS_PER_ITERATION")
            entry["target"] = target
            entry["samples"] = int(row[column["iterations"]])
            entry[metric][percentile] = value
    return results


def per_operation(results, name, metric, percentile=50.0):
    entry = results.get(name)
    if entry is None or percentile not in entry.get(metric, {}):
        return None
    return entry[metric][percentile] / OPERATIONS_PER_ITERATION[entry["target"]]


def time_text(nanoseconds):
    if nanoseconds is None:
        return "n/a"
    if nanoseconds < 1_000:
        return f"{nanoseconds:.0f} ns"
    if nanoseconds < 1_000_000:
        return f"{nanoseconds / 1_000:.2f} µs"
    return f"{nanoseconds / 1_000_000:.2f} ms"


def count_text(count):
    if count is None:
        return "n/a"
    if count == int(count):
        return f"{int(count):,}"
    return f"{count:.3f}"


def ratio_text(value):
    if value is None:
        return "n/a"
    return f"{value:.1f}x" if value >= 10 else f"{value:.2f}x"


# (what, numerator, denominator, target kind, bound, issue): the ratio is p50 time of numerator / denominator.
# "min": the ratio must be at least `bound` (the denominator is that many times faster); "max": at most `bound`.
TIME_TARGETS = [
    ("Read Int: FileStore vs [String: Any] floor", "Read Int / Defaults (FileStore)", "Read Int / [String: Any]",
     "max", 3, "4, file store"),
    ("Read Int: InMemoryStore vs [String: Any] floor", "Read Int / Defaults (InMemoryStore)",
     "Read Int / [String: Any]", "max", 3, "4"),
    ("Read Int: UserDefaults.integer vs FileStore", "Read Int / UserDefaults", "Read Int / Defaults (FileStore)",
     "min", 10, "file store"),
    ("Read struct: decode per read vs cached (FileStore)", "Read struct / decode per read (JSONDecoder)",
     "Read struct / Defaults (FileStore)", "min", 20, "4"),
    ("Read struct: cached (FileStore) vs Read Int (FileStore)", "Read struct / Defaults (FileStore)",
     "Read Int / Defaults (FileStore)", "max", 2, "4"),
    ("Read struct: UserDefaults + JSONDecoder vs cached (FileStore)", "Read struct / UserDefaults + JSONDecoder",
     "Read struct / Defaults (FileStore)", "info", None, ""),
    ("Write Int: UserDefaults.set vs FileStore", "Write Int / UserDefaults", "Write Int / Defaults (FileStore)",
     "min", 20, "file store"),
    ("Read Data 1 KB: UserDefaults vs FileStore", "Read Data 1 KB / UserDefaults",
     "Read Data 1 KB / Defaults (FileStore)", "min", 100, "file store"),
    ("Flush 10,000 keys: synchronize() vs FileStore flush()", "Flush 10,000 keys / UserDefaults synchronize()",
     "Flush 10,000 keys / Defaults (FileStore) flush()", "min", 1, "file store"),
    ("Flush 1,000 keys: synchronize() vs FileStore flush()", "Flush 1,000 keys / UserDefaults synchronize()",
     "Flush 1,000 keys / Defaults (FileStore) flush()", "info", None, ""),
    ("First read, fresh process: UserDefaults vs FileStore", "First read 10,000-key file / UserDefaults",
     "First read 10,000-key file / Defaults (FileStore) binary file", "min", 1, "file store"),
    # Issue 13: a read of an unchanged key cheaper than the dictionary lookup it replaces, cheaper writes and
    # notifications, reads that scale.
    ("Read Int: FileStore vs [String: Any] lookup + cast", "Read Int / Defaults (FileStore)",
     "Read Int / [String: Any]", "max", 1.0, "13"),
    ("Read Int: UserDefaults.integer vs FileStore (issue 13)", "Read Int / UserDefaults",
     "Read Int / Defaults (FileStore)", "min", 25, "13"),
    ("Read struct: cached (FileStore) vs [String: Any] lookup + cast", "Read struct / Defaults (FileStore)",
     "Read struct / [String: Any]", "max", 1.0, "13"),
    ("Write Int: FileStore vs [String: Any]", "Write Int / Defaults (FileStore)", "Write Int / [String: Any]",
     "max", 3, "13"),
    ("Notify 100 observers: Defaults.observe vs NotificationCenter.post",
     "Notify 100 observers / Defaults.observe (InMemoryStore)", "Notify 100 observers / NotificationCenter.post",
     "max", 1.0, "13"),
    # 2 threads doing 1,000 reads each in the time 1 thread does 1,000: at most 2 / 1.8 as long, i.e. at least 1.8x
    # the throughput.
    ("Read Int, 2 threads vs 1: time per round (≤ 1.11x = ≥ 1.8x throughput)",
     "Read Int, 2 threads / Defaults (FileStore)", "Read Int, 1 threads / Defaults (FileStore)", "max", 1.11, "13"),
    # The same threads loading one shared atomic, no library code: what the machine gave the run. A miss of the row
    # above with this one missing too is the machine (other load, or the two virtual CPUs placed on one core).
    ("Machine: one atomic load, 2 threads vs 1 (the ceiling of the row above)",
     "Read Int, 2 threads / one atomic load (no Defaults)", "Read Int, 1 threads / one atomic load (no Defaults)",
     "info", None, "32"),
    # Issue 32: writes within 1.5x of the dictionary (or of the encoder and the dictionary a user's own code would
    # take), a cached struct within 2x of an Int (the issue-4 row above, judged again), reads that scale (the 2-thread
    # row above).
    ("Write Int: FileStore vs [String: Any] (issue 32)", "Write Int / Defaults (FileStore)",
     "Write Int / [String: Any]", "max", 1.5, "32"),
    ("Write Int: InMemoryStore vs [String: Any]", "Write Int / Defaults (InMemoryStore)",
     "Write Int / [String: Any]", "max", 1.5, "32"),
    ("Write struct: FileStore vs JSONEncoder + [String: Any]", "Write struct / Defaults (FileStore)",
     "Write struct / JSONEncoder + [String: Any]", "max", 1.5, "32"),
    # Issue 32: what the 2x of a cached struct read asks is reachable for a struct whose copy is its bits; `Profile`,
    # with two strings, pays their retains and releases in the caller (Performance.md).
    ("Read struct of plain fields: cached (FileStore) vs Read Int (FileStore)",
     "Read struct of plain fields / Defaults (FileStore)", "Read Int / Defaults (FileStore)", "max", 2, "32"),
    ("Read struct of plain fields: cached (InMemoryStore) vs Read Int (InMemoryStore)",
     "Read struct of plain fields / Defaults (InMemoryStore)", "Read Int / Defaults (InMemoryStore)", "max", 2, "32"),
    # Issue 30: a system-wide defaults file and a locks file cost a read at most 2x.
    ("Read Int: FileStore with system file and lock vs without", "Read Int / Defaults (FileStore, system file and lock)",
     "Read Int / Defaults (FileStore)", "max", 2, "30"),
    ("Look up Int: FileStore with system file and lock vs without", "Look up Int / FileStore, system file and lock",
     "Look up Int / FileStore", "max", 2, "30"),
]

# Issue 28: sync on against off on a file store, and after the redesign against before it (SyncOnOff and
# SyncOnOffBefore, the same benchmarks against the library before it; Docs/Performance.md, "Sync on and off").
SYNC_ON_OFF = [
    ("local write x1000", "Sync write Int x1000 / FileStore"),
    ("write + flush()", "Sync write Int + flush() / FileStore"),
]
for _what, _name in SYNC_ON_OFF:
    for _side in ("after", "before"):
        TIME_TARGETS.append((f"Sync {_what}: synced key vs sync off ({_side})", f"{_name}, sync on, synced key ({_side})",
                             f"{_name}, sync off ({_side})", "info", None, "28"))
    TIME_TARGETS.append((f"Sync {_what}: unsynced key, sync on vs off (after)",
                         f"{_name}, sync on, unsynced key (after)", f"{_name}, sync off (after)", "info", None, "28"))
TIME_TARGETS.append(("Sync write + flush(): engine stopped, its files left, vs sync off (after)",
                     "Sync write Int + flush() / FileStore, engine stopped, its files left (after)",
                     "Sync write Int + flush() / FileStore, sync off (after)", "info", None, "28"))
for _name in [f"{_name}, {_mode}" for _what, _name in SYNC_ON_OFF
              for _mode in ("sync off", "sync on, synced key", "sync on, unsynced key", "engine stopped, its files left")] + [
        "Sync write Int, acknowledged / FileStore, synced key",
        "Sync atomic update (+1), committed / FileStore, synced key"]:
    TIME_TARGETS.append((f"{_name}: after vs before", f"{_name} (after)", f"{_name} (before)", "info", None, "28"))

ALLOCATION_TARGETS = [
    ("Allocations, Read Int (FileStore)", "Read Int / Defaults (FileStore)"),
    ("Allocations, Read Int (FileStore, system file and lock)", "Read Int / Defaults (FileStore, system file and lock)"),
    ("Allocations, Read Bool (FileStore)", "Read Bool / Defaults (FileStore)"),
    ("Allocations, Read Double (FileStore)", "Read Double / Defaults (FileStore)"),
    ("Allocations, cached Read struct (FileStore)", "Read struct / Defaults (FileStore)"),
    ("Allocations, Read Int (InMemoryStore)", "Read Int / Defaults (InMemoryStore)"),
    ("Allocations, cached Read struct (InMemoryStore)", "Read struct / Defaults (InMemoryStore)"),
    ("Allocations, cached Read struct of plain fields (FileStore)", "Read struct of plain fields / Defaults (FileStore)"),
    ("Allocations, Write Int (FileStore), no observers", "Write Int / Defaults (FileStore)"),
    ("Allocations, Write Int (InMemoryStore), no observers", "Write Int / Defaults (InMemoryStore)"),
    ("Allocations, Write Bool (FileStore), no observers", "Write Bool / Defaults (FileStore)"),
    ("Allocations, Write Bool (InMemoryStore), no observers", "Write Bool / Defaults (InMemoryStore)"),
]


def target_rows(results):
    rows = []
    for what, numerator, denominator, kind, bound, issue in TIME_TARGETS:
        top = per_operation(results, numerator, TIME)
        bottom = per_operation(results, denominator, TIME)
        ratio = top / bottom if top is not None and bottom else None
        if kind == "min":
            target = f"≥ {bound}x"
            verdict = "n/a" if ratio is None else ("PASS" if ratio >= bound else "MISS")
        elif kind == "max":
            target = f"≤ {bound}x"
            verdict = "n/a" if ratio is None else ("PASS" if ratio <= bound else "MISS")
        else:
            target, verdict = "", "info"
        detail = f"{time_text(top)} / {time_text(bottom)}"
        rows.append((what, ratio_text(ratio), detail, target, verdict, issue))
    for what, name in ALLOCATION_TARGETS:
        median = per_operation(results, name, MALLOCS)
        worst = per_operation(results, name, MALLOCS, 90.0)
        verdict = "n/a" if median is None else ("PASS" if median == 0 else "MISS")
        detail = f"p50 {count_text(median)}, p90 {count_text(worst)} per operation"
        rows.append((what, count_text(median), detail, "0", verdict, "4"))
    return rows


def result_rows(results):
    rows = []
    for name in sorted(results):
        entry = results[name]
        rows.append((
            name,
            time_text(per_operation(results, name, TIME)),
            time_text(per_operation(results, name, TIME, 90.0)),
            count_text(per_operation(results, name, MALLOCS)),
            f"{entry['samples']:,} x {OPERATIONS_PER_ITERATION[entry['target']]:,}",
        ))
    return rows


def print_table(header, rows, markdown):
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---" for _ in header) + "|")
        for row in rows:
            print("| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |")
        return
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    for row in [header, ["-" * width for width in widths], *rows]:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", help="the harness's Influx export (--format influx), e.g. Current_run.influx.csv")
    parser.add_argument("--results", action="store_true", help="also print every benchmark's p50 and allocations")
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    arguments = parser.parse_args()

    results = load(arguments.csv)
    if not results:
        sys.exit(f"no results in {arguments.csv}")

    if arguments.results:
        print_table(
            ["benchmark", "time p50 / op", "time p90 / op", "mallocs p50 / op", "samples x ops"],
            result_rows(results), arguments.markdown)
        print()
    rows = target_rows(results)
    print_table(["measure", "ratio", "p50 times / counts", "target", "result", "issue"], rows, arguments.markdown)
    misses = sum(1 for row in rows if row[4] == "MISS")
    passes = sum(1 for row in rows if row[4] == "PASS")
    print()
    print(f"{passes} passed, {misses} missed")


if __name__ == "__main__":
    main()
