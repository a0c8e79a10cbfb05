#!/usr/bin/env python3
"""Prints StateKit's benchmark medians as a markdown table, with each peer's ratio to the Floor.

Usage (from the repository root):
    python3 Benchmarks/Scripts/ratios.py                 # runs the suite, then prints the tables
    python3 Benchmarks/Scripts/ratios.py --csv run.csv   # prints the tables of a saved run
    python3 Benchmarks/Scripts/ratios.py --save run.csv  # runs, saves the raw CSV, prints

Extra arguments after `--` go to `swift package benchmark` (e.g. `-- --filter "2 write.*"`).
Benchmarks are named "<scenario>/<peer>"; the tool exports raw per-iteration values, which this
script divides by the iterations each sample stands for (see SCALE) to get per-operation values.
"""
import csv
import io
import os
import subprocess
import sys
from collections import defaultdict

PEERS = ["Floor", "StateKit", "Seed", "Combine", "Observation"]
# Samples of scenarios 3, 3e, 3w, 4 and 15 are one write each, of 9 all 10,000 changes and the flush; every other sample is 1,000 operations
# (`scalingFactor: .kilo` in StateKitBenchmarks.swift), but 5's are 100,000 increments per thread. Custom metrics are already per operation.
PER_SAMPLE_ONE = ("3 ", "3e ", "3w ", "4 ", "9 ", "15 ")


def run_suite(extra):
    package = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    command = ["swift", "package", "--package-path", package, "benchmark",
               "--format", "influx", "--path", "stdout", "--no-progress"] + extra
    print("$ " + " ".join(command), file=sys.stderr)
    result = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
    return result.stdout


def parse(text):
    """{(scenario, peer): {metric: median}} from the tool's influx CSV."""
    medians = defaultdict(dict)
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    for row in csv.reader(io.StringIO("\n".join(lines))):
        if len(row) < 11 or row[0] == "measurement" or row[9] != "50.0":
            continue
        metric, test, value = row[6], row[8], float(row[10])
        scenario, _, peer = test.rpartition("/")
        if not metric.startswith(("Time", "Malloc")) or scenario.startswith(PER_SAMPLE_ONE):
            scale = 1
        elif scenario.startswith("5 "):
            scale = 100_000
        else:
            scale = 1000
        medians[(scenario, peer)][metric] = value / scale
    return medians


def number(value):
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}".rstrip("0").rstrip(".") if value else "0"


def table(medians, metric, title, unit, ratios):
    scenarios = sorted({s for (s, _) in medians}, key=lambda s: (int(s.split()[0].rstrip("erw")), s))
    rows = []
    for scenario in scenarios:
        floor = medians.get((scenario, "Floor"), {}).get(metric)
        cells = []
        for peer in PEERS:
            value = medians.get((scenario, peer), {}).get(metric)
            if value is None:
                cells.append("n/a")
            elif ratios and floor and peer != "Floor":
                cells.append(f"{number(value)} ({value / floor:.2f}x)")
            else:
                cells.append(number(value))
        if any(cell != "n/a" for cell in cells):
            rows.append(f"| {scenario} | " + " | ".join(cells) + " |")
    if not rows:
        return ""
    header = f"**{title}** ({unit})\n\n| Scenario | " + " | ".join(PEERS) + " |\n"
    header += "|---|" + "---:|" * len(PEERS) + "\n"
    return header + "\n".join(rows) + "\n"


def single_table(medians, metrics, title):
    """Scenarios measured on StateKit variants only (no Floor), one column per metric."""
    names = sorted((name for name in medians if name[1] not in PEERS), key=lambda n: (int(n[0].split()[0]), n))
    if not names:
        return ""
    text = f"**{title}**\n\n| Scenario | Variant | " + " | ".join(label for _, label in metrics) + " |\n"
    text += "|---|---|" + "---:|" * len(metrics) + "\n"
    for scenario, variant in names:
        values = [medians[(scenario, variant)].get(metric) for metric, _ in metrics]
        text += f"| {scenario} | {variant} | " + " | ".join("n/a" if v is None else number(v) for v in values) + " |\n"
    return text


def main(argv):
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    if "--csv" in argv:
        with open(argv[argv.index("--csv") + 1]) as file:
            text = file.read()
    else:
        text = run_suite(extra)
        if "--save" in argv:
            with open(argv[argv.index("--save") + 1], "w") as file:
                file.write(text)
    medians = parse(text)
    print(table(medians, "Time(wallclock)", "Median time per operation, ratio to the Floor",
                "ns; 3-4: per write with 1,000 projections; 5: per increment on each of 2 threads; 9: per 10,000 changes + flush", True))
    print(table(medians, "Malloc(total)", "Allocations per operation", "median count", False))
    print(table(medians, "Malloc(bytestotal)", "Bytes allocated per operation", "median", False))
    print(table(medians, "pathevaluationsperwrite", "Path evaluations per write", "scenario 4", False))
    print(single_table(medians, [("Time(wallclock)", "median ns"), ("Malloc(total)", "allocations"),
                                 ("storagewritesper10000changes", "storage writes")],
                       "SyncedState (8: per write) and PersistedState (9: per 10,000 changes + flush)"))
    print(table(medians, "lostupdatesper1000", "Lost updates per 1,000 increments", "scenario 5", False))


if __name__ == "__main__":
    main(sys.argv[1:])
