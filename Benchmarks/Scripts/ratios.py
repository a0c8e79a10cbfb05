#!/usr/bin/env python3
"""Prints StateKit's benchmark medians as a markdown table, with each peer's ratio to the Floor.

Usage (from the repository root):
    python3 Benchmarks/Scripts/ratios.py                 # runs the suite, then prints the tables
    python3 Benchmarks/Scripts/ratios.py --csv run.csv   # prints the tables of a saved run
    python3 Benchmarks/Scripts/ratios.py --csv a.csv b.csv c.csv  # the range of each cell over saved runs
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
# Samples of scenarios 3, 3e, 3w, 4 and 15 are one write each, of 9 all 10,000 changes and the flush, of 9s one modify; every other sample is
# 1,000 operations (`scalingFactor: .kilo` in StateKitBenchmarks.swift), but 5's are 100,000 increments per thread. Custom metrics are already
# per operation.
PER_SAMPLE_ONE = ("3 ", "3e ", "3w ", "4 ", "9 ", "9s ", "15 ")


def scenario_number(scenario):
    """The number a scenario's name starts with, for sorting: 3 for "3e fan-out ...", 9 for "9s ..."."""
    digits = scenario.split()[0]
    return int(digits[:len(digits) - len(digits.lstrip("0123456789"))])


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


def spread(values, format=number):
    """One value, or the range of several runs' values: "15.2-15.6"."""
    low, high = format(min(values)), format(max(values))
    return low if low == high else f"{low}-{high}"


def ratio(value):
    return f"{value:.2f}x"


def table(runs, metric, title, unit, ratios):
    """One row per scenario, one column per peer; each cell the range over `runs` of the peer's
    median and, with `ratios`, of its ratio to the same run's Floor."""
    scenarios = sorted({s for run in runs for (s, _) in run}, key=lambda s: (scenario_number(s), s))
    rows = []
    for scenario in scenarios:
        cells = []
        for peer in PEERS:
            pairs = [(run[(scenario, peer)][metric], run.get((scenario, "Floor"), {}).get(metric))
                     for run in runs if metric in run.get((scenario, peer), {})]
            if not pairs:
                cells.append("n/a")
            elif ratios and peer != "Floor" and all(floor for _, floor in pairs):
                cells.append(f"{spread([v for v, _ in pairs])} ({spread([v / f for v, f in pairs], ratio)})")
            else:
                cells.append(spread([v for v, _ in pairs]))
        if any(cell != "n/a" for cell in cells):
            rows.append(f"| {scenario} | " + " | ".join(cells) + " |")
    if not rows:
        return ""
    header = f"**{title}** ({unit})\n\n| Scenario | " + " | ".join(PEERS) + " |\n"
    header += "|---|" + "---:|" * len(PEERS) + "\n"
    return header + "\n".join(rows) + "\n"


def single_table(runs, metrics, title):
    """Scenarios measured on StateKit variants only (no Floor), one column per metric."""
    names = sorted({name for run in runs for name in run if name[1] not in PEERS},
                   key=lambda n: (scenario_number(n[0]), n))
    if not names:
        return ""
    text = f"**{title}**\n\n| Scenario | Variant | " + " | ".join(label for _, label in metrics) + " |\n"
    text += "|---|---|" + "---:|" * len(metrics) + "\n"
    for name in names:
        cells = []
        for metric, _ in metrics:
            values = [run[name][metric] for run in runs if metric in run.get(name, {})]
            cells.append(spread(values) if values else "n/a")
        text += f"| {name[0]} | {name[1]} | " + " | ".join(cells) + " |\n"
    return text


def main(argv):
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    if "--csv" in argv:
        texts = []
        for path in argv[argv.index("--csv") + 1:]:
            with open(path) as file:
                texts.append(file.read())
    else:
        texts = [run_suite(extra)]
        if "--save" in argv:
            with open(argv[argv.index("--save") + 1], "w") as file:
                file.write(texts[0])
    runs = [parse(text) for text in texts]
    print(table(runs, "Time(wallclock)", "Median time per operation, ratio to the Floor",
                "ns; 3-4: per write with 1,000 projections; 5: per increment on each of 2 threads; 9: per 10,000 changes + flush", True))
    print(table(runs, "Malloc(total)", "Allocations per operation", "median count", False))
    print(table(runs, "Malloc(bytestotal)", "Bytes allocated per operation", "median", False))
    print(table(runs, "pathevaluationsperwrite", "Path evaluations per write", "scenario 4", False))
    print(single_table(runs, [("Time(wallclock)", "median ns"), ("Malloc(total)", "allocations"),
                              ("storagewritesper10000changes", "storage writes")],
                       "SyncedState (8: per write) and PersistedState (9: per 10,000 changes + flush; 9s: per modify)"))
    print(table(runs, "lostupdatesper1000", "Lost updates per 1,000 increments", "scenario 5", False))


if __name__ == "__main__":
    main(sys.argv[1:])
