#!/usr/bin/env python3
"""Type-checks each snippet of Scripts/compile-fails and compares its errors with its markers.

Called by Scripts/check-compile-fails.sh, whose header documents the markers.
"""

import os
import platform
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SNIPPETS = ROOT / "Scripts" / "compile-fails"
GOTCHAS = ROOT / "Sources" / "StateKit" / "StateKit.docc" / "Essentials" / "Gotchas.md"
MARKER = re.compile(r"//\s*(error|gotcha):\s*(.+?)\s*(?=//\s*(?:error|gotcha):|$)")
DIAGNOSTIC = re.compile(r"^(.*?):(\d+):(\d+): (error|note): (.*)$")


def scratch_path():
    args = sys.argv[1:]
    if "--scratch-path" in args:
        return args[args.index("--scratch-path") + 1]
    return ".build"


def modules_directory(scratch):
    """Builds StateKit (a no-op when it is up to date) and returns where its module is."""
    build = ["swift", "build", "--target", "StateKit", "--scratch-path", scratch]
    subprocess.run(build, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    bin_path = subprocess.run(
        ["swift", "build", "--show-bin-path", "--scratch-path", scratch],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout.strip()
    modules = Path(bin_path) / "Modules"
    return modules if modules.is_dir() else Path(bin_path)


def markers(path):
    """The expected errors of a snippet: {line: [(kind, text)]}."""
    expected = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        code = line.split("//")[0]
        for match in MARKER.finditer(line) if code.strip() else []:
            expected.setdefault(number, []).append((match.group(1), match.group(2)))
    return expected


def typecheck(path, modules):
    command = ["swiftc", "-typecheck", "-swift-version", "6", "-diagnostic-style=llvm", "-I", str(modules)]
    if platform.system() == "Darwin":
        command += ["-target", f"{platform.machine()}-apple-macos15.0"]
    run = subprocess.run(command + [str(path)], capture_output=True, text=True)
    errors = {}
    in_expansion = []  # errors inside a macro's expansion, waiting for the snippet line it came from
    for line in (run.stdout + run.stderr).splitlines():
        match = DIAGNOSTIC.match(line)
        if not match:
            continue
        in_snippet = Path(match.group(1)).name == path.name
        if match.group(4) == "error" and in_snippet:
            errors.setdefault(int(match.group(2)), []).append(match.group(5))
        elif match.group(4) == "error" and "@__swiftmacro_" in match.group(1):
            in_expansion.append(match.group(5))
        elif in_snippet and in_expansion:
            # The first note in the snippet after such an error names the expanded declaration.
            errors.setdefault(int(match.group(2)), []).extend(in_expansion)
            in_expansion = []
    return run.returncode, errors


def normalised(text):
    return " ".join(text.replace("`", "").split())


def check(path, modules, gotchas):
    rel = path.relative_to(ROOT)
    expected = markers(path)
    status, errors = typecheck(path, modules)
    problems = []
    if status == 0:
        problems.append(f"{rel}: compiles, but must fail")
    for line, wanted in expected.items():
        found = errors.get(line, [])
        for kind, text in wanted:
            if not any(text in error for error in found):
                actual = "\n    ".join(found) or "no error"
                problems.append(f"{rel}:{line}: no error containing “{text}”; the compiler says:\n    {actual}")
            if kind == "gotcha" and normalised(text) not in gotchas:
                problems.append(f"{rel}:{line}: Gotchas.md does not quote “{text}”")
    for line, found in errors.items():
        if line not in expected:
            problems.append(f"{rel}:{line}: unexpected error: {found[0]}")
    return sum(len(wanted) for wanted in expected.values()), problems


def main():
    modules = modules_directory(scratch_path())
    gotchas = normalised(GOTCHAS.read_text())
    snippets = sorted(SNIPPETS.glob("*.swift"))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(lambda path: check(path, modules, gotchas), snippets))
    problems = [problem for _, found in results for problem in found]
    count = sum(count for count, _ in results)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        print(f"compile-fail check: {len(problems)} problem(s) in {len(snippets)} snippets", file=sys.stderr)
        return 1
    print(f"== {len(snippets)} snippets: {count} habits fail to compile with the expected message")
    return 0


if __name__ == "__main__":
    sys.exit(main())
