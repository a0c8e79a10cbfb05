#!/usr/bin/env python3
"""Compiles every ```swift example of the documentation and runs the ones that show their output.

Called by Scripts/check-doc-examples.sh, whose header documents the conventions.
"""

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRELUDES = ROOT / "Scripts" / "doc-examples" / "preludes"
WORK = ROOT / ".build" / "doc-examples"

FENCE = re.compile(r"^(\s*)```+\s*([\w+-]*)\s*$")
MARKER = re.compile(r"<!--\s*(no-check|prelude|continues|output)\b:?(.*?)-->", re.S)
DECL = re.compile(
    r"^(?:@\w+(?:\([^)]*\))?\s+)*"
    r"(?:(?:public|private|fileprivate|internal|open|final|nonisolated|indirect)\s+)*"
    r"(struct|class|enum|protocol|actor|extension|typealias|import|precedencegroup|infix|prefix|postfix)\b"
)
TYPE_NAME = re.compile(r"\b(struct|class|enum|protocol|actor|typealias)\s+(\w+)")
ACCESS = re.compile(r"\b(public|private|fileprivate|internal|open)\s")
ATTRIBUTE_LINE = re.compile(r"^@\w+(\([^)]*\))?\s*$")
TEST_FUNC = re.compile(r"^(?:@\w+(?:\([^)]*\))?\s+)*@(Test|Suite)\b|^@(Test|Suite)\b")


class Example:
    """One compiled unit: one block, or a block and the blocks that continue it."""

    def __init__(self, doc, ident, prelude_file):
        self.doc = doc
        self.ident = ident
        self.prelude_file = prelude_file
        self.parts = []  # (line, code, hidden prelude code or None, prelude line)
        self.output = None


def doc_files():
    files = [ROOT / "README.md"]
    files += sorted(ROOT.glob("Sources/*/*.docc/**/*.md"))
    return files


def source_files():
    return sorted(ROOT.glob("Sources/*/**/*.swift"))


def read_markdown(path):
    """Lines of a Markdown file as (line number, text)."""
    return [(i + 1, line.rstrip("\n")) for i, line in enumerate(path.read_text().splitlines())]


def read_doc_comments(path):
    """The `///` lines of a Swift file as runs of (line number, text without the slashes)."""
    runs, current = [], []
    for i, line in enumerate(path.read_text().splitlines()):
        stripped = line.strip()
        if stripped.startswith("///"):
            text = stripped[3:]
            current.append((i + 1, text[1:] if text.startswith(" ") else text))
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return runs


def prelude_for(rel, module=None):
    """The prelude file of a document, or of a module's symbol comments."""
    if module:
        candidate = PRELUDES / "Sources" / f"{module}.swift"
    else:
        candidate = PRELUDES / rel.with_suffix(".swift")
    return candidate if candidate.exists() else None


def scan(lines, rel, stem, prelude_file, examples, skipped, problems):
    """Finds the swift blocks of one run of lines and adds them to `examples`."""
    pending = []  # markers seen since the last block
    comment = None
    i = 0
    last = None
    count = 0
    while i < len(lines):
        number, text = lines[i]
        if comment is not None:
            comment[1].append(text)
            if "-->" in text:
                pending.append((comment[0], "\n".join(comment[1])))
                comment = None
            i += 1
            continue
        if text.strip().startswith("<!--"):
            if "-->" in text:
                pending.append((number, text.strip()))
            else:
                comment = (number, [text.strip()])
            i += 1
            continue
        fence = FENCE.match(text)
        if not fence:
            if text.strip():
                pending = []
            i += 1
            continue
        indent, language = fence.group(1), fence.group(2)
        body, j = [], i + 1
        while j < len(lines) and not FENCE.match(lines[j][1]):
            body.append((lines[j][0], lines[j][1][len(indent):] if lines[j][1].startswith(indent) else lines[j][1].lstrip()))
            j += 1
        start = number + 1
        marked_output = any("<!-- output" in marker.replace("<!--output", "<!-- output") for _, marker in pending)
        if language == "text" and last is not None and (last_end == i or marked_output):
            last.output = (last.output or "") + "".join(t + "\n" for _, t in body)
        elif language == "swift":
            markers = {}
            for marker_line, marker in pending:
                for kind, value in MARKER.findall(marker):
                    markers.setdefault(kind, []).append((marker_line, value.strip()))
            if "no-check" in markers:
                reason = markers["no-check"][0][1]
                if not reason:
                    problems.append(f"{rel}:{number}: no-check needs a reason: <!-- no-check: why -->")
                skipped.append(f"{rel}:{number}: {reason}")
                last = None
            else:
                hidden = None
                if "prelude" in markers:
                    line, code = markers["prelude"][0]
                    hidden = (line, "\n".join(code.splitlines()))
                code = "\n".join(t for _, t in body)
                if "continues" in markers and last is not None:
                    last.parts.append((start, code, hidden))
                else:
                    if "continues" in markers:
                        problems.append(f"{rel}:{number}: 'continues' with no checked block before it")
                    count += 1
                    last = Example(rel, f"{stem}_{number}", prelude_file)
                    last.parts.append((start, code, hidden))
                    examples.append(last)
        else:
            last = None if language else last
        pending = []
        last_end = j + 1
        # Blank lines between a swift block and its text block are fine.
        k = j + 1
        while k < len(lines) and not lines[k][1].strip():
            k += 1
        last_end = k
        i = j + 1


def split(code):
    """Splits example code into file-scope declarations and statements for a function body.

    Types, extensions, protocols, imports and `@Test` functions starting in column 0 go to file
    scope (with `fileprivate` added to named types so that examples do not clash); everything
    else runs in the example's function, in order.
    """
    lines = code.splitlines()
    top, body = [], []
    i = 0
    while i < len(lines):
        line = lines[i]
        j = i
        while j < len(lines) and ATTRIBUTE_LINE.match(lines[j]) and j + 1 < len(lines):
            j += 1
        head = " ".join(lines[i : j + 1])
        if line.startswith("#if"):
            depth, k = 0, i
            while k < len(lines):
                if lines[k].startswith("#if"):
                    depth += 1
                elif lines[k].startswith("#endif"):
                    depth -= 1
                k += 1
                if depth == 0:
                    break
            inner = [l for l in lines[i + 1 : k] if l.strip() and not l.startswith("#")]
            if inner and (DECL.match(inner[0]) or TEST_FUNC.match(inner[0]) or ATTRIBUTE_LINE.match(inner[0])):
                top.append((i, lines[i:k]))
            else:
                body.extend((n, lines[n]) for n in range(i, k))
            i = k
        elif DECL.match(head) or TEST_FUNC.match(head):
            depth, k = 0, i
            opened = False
            while k < len(lines):
                depth += braces(lines[k])
                opened = opened or "{" in strip_strings(lines[k])
                k += 1
                if depth <= 0 and (opened or k > j):
                    break
            top.append((i, lines[i:k]))
            i = k
        else:
            body.append((i, line))
            i += 1
    return top, body


def strip_strings(line):
    line = re.sub(r'"(?:\\.|[^"\\])*"', '""', line)
    return line.split("//")[0]


def braces(line):
    line = strip_strings(line)
    return line.count("{") - line.count("}")


PLAIN_EXTENSION = re.compile(r"^((?:@\w+(?:\([^)]*\))?\s+)*)(extension\s+[\w.]+(?:\s+where\b[^{]*)?\s*\{)")


def private_extension(line):
    """`fileprivate extension X {` for an extension that adds no conformance, else `None`: its
    members (a `StateKeys` key, say) become file-private, like the examples' types they use."""
    match = PLAIN_EXTENSION.match(line)
    return match.group(1) + "fileprivate " + line[len(match.group(1)) :] if match else None


def make_private(lines):
    """Adds `fileprivate` to the first named type or test function of a declaration, or to an
    extension that adds no conformance."""
    out = list(lines)
    for n, line in enumerate(out):
        if line.lstrip().startswith("@") and ATTRIBUTE_LINE.match(line):
            continue
        if private_extension(line):
            out[n] = private_extension(line)
            return out
        if re.match(r"^(?:@\w+(?:\([^)]*\))?\s+)*(import|extension|precedencegroup|infix|prefix|postfix)\b", line):
            return out
        if ACCESS.search(line.split("{")[0]):
            return out
        match = re.match(
            r"^((?:@\w+(?:\([^)]*\))?\s+)*)(.*?\b(?:struct|class|enum|protocol|actor|typealias|func)\b)", line
        )
        if match:
            out[n] = match.group(1) + "fileprivate " + line[len(match.group(1)) :]
        return out
    return out


def prelude_chunks(code):
    """Splits a prelude file into its file-scope declarations: (line offset, lines, names)."""
    lines = code.splitlines()
    out, i = [], 0
    while i < len(lines):
        if not lines[i].strip() or lines[i].lstrip().startswith("//"):
            i += 1
            continue
        k, depth, directive = i, 0, 0
        while k < len(lines):
            line = lines[k]
            if line.startswith("#if"):
                directive += 1
            elif line.startswith("#endif"):
                directive -= 1
            depth += braces(line)
            k += 1
            if depth <= 0 and directive <= 0 and not ATTRIBUTE_LINE.match(line):
                break
        chunk = lines[i:k]
        head = " ".join(chunk[:3])
        names = {m.group(2) for m in TYPE_NAME.finditer(head)}
        names |= set(re.findall(r"\b(?:let|var|func)\s+(\w+)", chunk[0] if not chunk[0].startswith("#if") else ""))
        out.append((i, chunk, names))
        i = k
    return out


def make_file_private(lines):
    """Adds `fileprivate` to a prelude declaration that has no access level of its own."""
    if lines[0].startswith("#if") or lines[0].startswith("import "):
        return lines
    out = list(lines)
    for n, line in enumerate(out):
        if ATTRIBUTE_LINE.match(line):
            continue
        if private_extension(line):
            out[n] = private_extension(line)
            return out
        if re.match(r"^(?:@\w+(?:\([^)]*\))?\s+)*(extension|precedencegroup|infix|prefix|postfix)\b", line):
            return out
        if ACCESS.search(line.split("{")[0].split("=")[0]):
            return out
        match = re.match(
            r"^((?:@\w+(?:\([^)]*\))?\s+)*)(.*?\b(?:struct|class|enum|protocol|actor|typealias|func|let|var)\b)",
            line,
        )
        if match:
            out[n] = match.group(1) + "fileprivate " + line[len(match.group(1)) :]
        return out
    return out


def render(example, index):
    """The Swift file of one example."""
    imports = {"import StateKit"}
    declarations = []  # (doc path, line, lines, names, scope)
    statements = []  # (doc path, line, lines, scope)

    def add(path, base_line, code, scope):
        top, body = split(code)
        for offset, decl in top:
            first = decl[0].strip()
            if first.startswith("#if"):
                names = {m.group(2) for m in TYPE_NAME.finditer(" ".join(decl))}
                declarations.append((path, base_line + offset, decl, names, scope))
                continue
            if first.startswith("import ") or re.match(r"^@\w+.*\bimport\b", first):
                imports.add(first)
                continue
            names = {m.group(2) for m in TYPE_NAME.finditer(" ".join(decl[:2]))}
            declarations.append((path, base_line + offset, make_private(decl), names, scope))
        run, run_start = [], None
        for offset, line in body:
            if run and offset != run[-1][0] + 1:
                statements.append((path, base_line + run_start, [l for _, l in run], scope))
                run = []
            if not run:
                run_start = offset
            run.append((offset, line))
        if run:
            statements.append((path, base_line + run_start, [l for _, l in run], scope))

    for start, code, hidden in example.parts:
        if hidden:
            add(example.doc, hidden[0], hidden[1], "hidden")
        add(example.doc, start, code, "example")

    prelude = []
    if example.prelude_file:
        path = str(example.prelude_file.relative_to(ROOT))
        dropped = set()
        for _, _, _, names, _ in declarations:
            dropped |= names
        chunks = prelude_chunks(example.prelude_file.read_text())
        changed = True
        while changed:  # drop what the example declares itself, and what depends on it
            changed = False
            for offset, chunk, names in chunks:
                if names and names <= dropped:
                    continue
                text = "\n".join(chunk)
                if (names & dropped) or any(re.search(rf"\b{re.escape(n)}\b", text) for n in dropped - names):
                    dropped |= names or {f"#{offset}"}
                    changed = True
        for offset, chunk, names in chunks:
            if (names and names <= dropped) or f"#{offset}" in dropped:
                continue
            if chunk[0].startswith("import "):
                imports.add(chunk[0].strip())
                continue
            prelude.append(f'#sourceLocation(file: "{path}", line: {offset + 1})')
            prelude += make_file_private(chunk)
            prelude.append("#sourceLocation()")

    out = sorted(imports)
    out.append("")
    out += prelude
    for path, line, decl, names, scope in declarations:
        out.append(f'#sourceLocation(file: "{path}", line: {line})')
        out += decl
        out.append("#sourceLocation()")
    out.append("")
    out.append(f"func {example.ident}() async throws {{")
    for path, line, lines, scope in statements:
        out.append(f'#sourceLocation(file: "{path}", line: {line})')
        out += lines
        out.append("#sourceLocation()")
    out.append("}")
    return "\n".join(out) + "\n"


def identifier(text):
    return re.sub(r"\W", "_", text)


def collect(with_symbols):
    examples, skipped, problems = [], [], []
    for path in doc_files():
        rel = path.relative_to(ROOT)
        scan(read_markdown(path), str(rel), identifier(str(rel.with_suffix(""))), prelude_for(rel), examples, skipped, problems)
    if with_symbols:
        for path in source_files():
            rel = path.relative_to(ROOT)
            module = rel.parts[1]
            for run in read_doc_comments(path):
                scan(run, str(rel), identifier(str(rel.with_suffix(""))), prelude_for(rel, module), examples, skipped, problems)
    return examples, skipped, problems


def package_manifest():
    identity = ROOT.name.lower()
    return f"""// swift-tools-version:6.0
// Generated by Scripts/check-doc-examples.sh: one file per documentation example.
import PackageDescription

let package = Package(
    name: "DocExamples",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [.package(path: "{ROOT}")],
    targets: [
        .executableTarget(
            name: "DocExamples",
            dependencies: [
                .product(name: "StateKit", package: "{identity}"),
                .product(name: "StateKitTesting", package: "{identity}"),
                .product(name: "StateKitHTTP", package: "{identity}"),
                .product(name: "StateKitInspector", package: "{identity}"),
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
"""


def main():
    with_symbols = "--with-symbol-comments" in sys.argv
    examples, skipped, problems = collect(with_symbols)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    sources = WORK / "Sources" / "DocExamples"
    if sources.exists():
        shutil.rmtree(sources)
    sources.mkdir(parents=True)
    manifest = WORK / "Package.swift"
    if not manifest.exists() or manifest.read_text() != package_manifest():
        manifest.write_text(package_manifest())
    calls = []
    for n, example in enumerate(examples):
        (sources / f"{example.ident}.swift").write_text(render(example, n))
        if example.output is not None:
            calls.append(f'case "{example.ident}": try await {example.ident}()')
    main_swift = ["let name = CommandLine.arguments.dropFirst().first ?? \"\"", "switch name {"]
    main_swift += calls
    main_swift += ['default: fatalError("no example with output named \\(name)")', "}"]
    (sources / "main.swift").write_text("\n".join(main_swift) + "\n")

    print(f"== compiling {len(examples)} examples ({len(skipped)} exempt)")
    build = subprocess.run(["swift", "build", "--package-path", str(WORK)], capture_output=True, text=True)
    if build.returncode != 0:
        errors = []
        for l in (build.stdout + build.stderr).splitlines():
            if "error:" in l and l not in errors:
                errors.append(l)
        print("\n".join(errors) or build.stdout + build.stderr, file=sys.stderr)
        print("doc examples do not compile (paths point at the documentation lines)", file=sys.stderr)
        return 1
    binary = WORK / ".build" / "debug" / "DocExamples"
    failures = 0
    checked = 0
    for example in examples:
        if example.output is None:
            continue
        checked += 1
        run = subprocess.run([str(binary), example.ident], capture_output=True, text=True, timeout=60)
        actual = "\n".join(l.rstrip() for l in run.stdout.rstrip().splitlines())
        expected = "\n".join(l.rstrip() for l in example.output.rstrip().splitlines())
        if run.returncode != 0 or actual != expected:
            failures += 1
            line = example.parts[0][0] - 1
            print(f"{example.doc}:{line}: output differs (exit {run.returncode})", file=sys.stderr)
            print(f"--- expected\n{expected}\n--- actual\n{actual}\n{run.stderr}", file=sys.stderr)
    print(f"== ran {checked} examples that show their output: {checked - failures} match")
    for line in skipped:
        print(f"   exempt: {line}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
