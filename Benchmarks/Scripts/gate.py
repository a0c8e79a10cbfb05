#!/usr/bin/env python3
"""The CI gate on StateKit's hot paths: instructions and allocations per operation, counted with
callgrind (repeatable on a busy machine, where wall-clock time is not), against the thresholds
committed in Benchmarks/Thresholds/hot-paths.json. In the spirit of swift-nio's allocation-counter
thresholds.

Usage (from the repository root, after `swift build -c release --package-path Benchmarks`):
    python3 Benchmarks/Scripts/gate.py            # fails if a path exceeds its threshold by > 5%, or
                                                  # is so far under it that 10% more would pass
    python3 Benchmarks/Scripts/gate.py --update   # writes the measured counts as the thresholds

A change that makes a path cheaper should lower its thresholds (--update) in the same commit, so
that the gate keeps what it earned; one that makes it dearer on purpose raises them there too,
and says why in the commit message.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
THRESHOLDS = os.path.join(ROOT, "Thresholds", "hot-paths.json")
BINARY = os.path.join(ROOT, ".build", "release", "StateKitProfile")
TOLERANCE = 0.05
# The regression the gate must catch in every path: a path whose count has fallen so far under
# its threshold that this much more would still pass fails too, until its threshold is lowered.
REGRESSION = 0.10
# swift_slowAlloc calls malloc, so counting malloc and its siblings counts every Swift allocation once.
ALLOCATORS = {"malloc", "calloc", "realloc", "posix_memalign", "aligned_alloc"}


def measure(scenario, count):
    """Instructions and allocations per operation of `scenario`, in its `measured` loop only."""
    with tempfile.TemporaryDirectory() as directory:
        out = os.path.join(directory, "callgrind.out")
        subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--collect-atstart=no",
             "--toggle-collect=*measured*", BINARY, scenario, str(count)],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return parse(out, count)


def parse(path, count):
    """Sums the instructions of the collected events and the calls made to allocation functions."""
    names = {}
    instructions = 0
    allocations = 0
    callee = None
    pending_calls = None
    with open(path) as file:
        for line in file:
            line = line.rstrip("\n")
            if line.startswith("summary:") or line.startswith("totals:"):
                instructions = int(line.split()[1])
                continue
            # Callgrind names a function once, at its first `fn=` or `cfn=` line, and by number
            # after that, whichever kind of line came first.
            match = re.match(r"(c?)fn=\((\d+)\)(?: (.*))?$", line)
            if match:
                is_callee, ident, name = match.group(1), match.group(2), match.group(3)
                if name is not None:
                    names[ident] = name
                if is_callee:
                    callee = names.get(ident, "")
                continue
            if line.startswith("calls="):
                pending_calls = int(line.split("=")[1].split()[0])
                continue
            if pending_calls is not None:
                # The line after `calls=` is the call's cost line; the count is what matters.
                if callee in ALLOCATORS:
                    allocations += pending_calls
                pending_calls = None
    return instructions / count, allocations / count


def main():
    update = "--update" in sys.argv
    if not os.path.exists(BINARY):
        sys.exit(f"gate: {BINARY} is missing; build it first: swift build -c release --package-path Benchmarks")
    with open(THRESHOLDS) as file:
        thresholds = json.load(file)
    failures = []
    for scenario, limit in thresholds["paths"].items():
        instructions, allocations = measure(scenario, limit["operations"])
        line = f"{scenario:>13}: {instructions:12,.0f} instructions, {allocations:6.2f} allocations per operation"
        if update:
            limit["instructions"] = round(instructions)
            limit["allocations"] = round(allocations, 2)
            print(line)
            continue
        over = []
        if instructions > limit["instructions"] * (1 + TOLERANCE):
            over.append(f"instructions {instructions:,.0f} > {limit['instructions']:,} + 5%")
        if allocations > limit["allocations"] * (1 + TOLERANCE) + 0.01:
            over.append(f"allocations {allocations:.2f} > {limit['allocations']} + 5%")
        # A threshold far above the count would let a regression of REGRESSION through.
        if instructions * (1 + REGRESSION) <= limit["instructions"] * (1 + TOLERANCE):
            over.append(f"instructions {instructions:,.0f} so far under {limit['instructions']:,} that "
                        f"{REGRESSION:.0%} more would pass: lower the threshold (--update)")
        print(line + ("   FAILS: " + "; ".join(over) if over else f"   (threshold {limit['instructions']:,})"))
        if over:
            failures.append(scenario)
    if update:
        with open(THRESHOLDS, "w") as file:
            json.dump(thresholds, file, indent=2)
            file.write("\n")
        print(f"gate: wrote {THRESHOLDS}")
    elif failures:
        sys.exit(f"gate: {', '.join(failures)} failed. Over a threshold by more than 5%: make the path cheaper, "
                 "or raise the threshold (--update) in the commit that explains why. Far under it: lower it "
                 "(--update) in the commit that earned it.")
    else:
        print("gate: every hot path is within 5% of its threshold")


if __name__ == "__main__":
    main()
