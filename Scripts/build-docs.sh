#!/usr/bin/env bash
# Builds the DocC catalogs of StateKit, StateKitTesting and StateKitHTTP with warnings as errors,
# so every symbol link must resolve.
#
# No plugin needed: the compiler emits symbol graphs, then `docc convert` renders each catalog.
# The symbol-graph build uses its own scratch path so it does not invalidate the normal build.
# Usage: Scripts/build-docs.sh [output-directory]   (default: .build/docs; one
# <Module>.doccarchive in it per library). It ends by printing how to preview them.
set -euo pipefail

cd "$(dirname "$0")/.."

scratch=".build/docs"
symbol_graphs="$scratch/symbol-graphs"
output="${1:-$scratch}"
modules=(StateKit StateKitTesting StateKitHTTP StateKitInspector)

build_symbol_graphs() {
    for module in "${modules[@]}"; do
        swift build --target "$module" --scratch-path "$scratch" \
            -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$symbol_graphs" >/dev/null
    done
}

# The compiler writes symbol graphs only when it compiles the module; an up-to-date build writes
# none, so keep the directory between runs, and force a rebuild of a module whose graph is missing.
mkdir -p "$symbol_graphs"
build_symbol_graphs
missing=0
for module in "${modules[@]}"; do
    if [[ ! -f "$symbol_graphs/$module.symbols.json" ]]; then
        rm -rf "$scratch/debug/$module.build"
        missing=1
    fi
done
if [[ $missing == 1 ]]; then
    build_symbol_graphs
fi

for module in "${modules[@]}"; do
    # Each archive gets its own module's graphs (and its extensions of other modules' types).
    module_graphs="$scratch/symbol-graphs-$module"
    rm -rf "$module_graphs"
    mkdir -p "$module_graphs"
    cp "$symbol_graphs/$module.symbols.json" "$module_graphs/"
    cp "$symbol_graphs/$module"@*.symbols.json "$module_graphs/" 2>/dev/null || true
    if [[ $module != StateKit ]]; then
        # DocC resolves links only within one module's archive: a link into StateKit
        # (``StateKit/StateSink``) is shown as code voice here, after StateKit's own archive, built
        # first, has checked the symbol exists.
        python3 - "$module_graphs" "$symbol_graphs/StateKit.symbols.json" <<'PYTHON'
import glob, json, re, sys
directory, statekit = sys.argv[1], json.load(open(sys.argv[2]))
known = {"/".join(s["pathComponents"]) for s in statekit["symbols"]}
link = re.compile(r"``StateKit/([^`]+)``")
missing = []
def unlink(match):
    path = re.sub(r"-[0-9a-z]{4,6}$|\([^)]*\)(->.*)?$", "", match.group(1).split("/")[0])
    if not any(k == path or k.startswith(path + "/") for k in known):
        missing.append(match.group(0))
    return "`" + match.group(1).split("/")[-1] + "`"
for path in glob.glob(directory + "/*.symbols.json"):
    graph = json.load(open(path))
    for symbol in graph["symbols"]:
        for line in symbol.get("docComment", {}).get("lines", []):
            line["text"] = link.sub(unlink, line["text"])
    json.dump(graph, open(path, "w"))
if missing:
    sys.exit("links to StateKit symbols that do not exist: " + ", ".join(sorted(set(missing))))
PYTHON
    fi
    docc convert "Sources/$module/$module.docc" \
        --additional-symbol-graph-dir "$module_graphs" \
        --fallback-display-name "$module" \
        --fallback-bundle-identifier "org.statekit.$module" \
        --output-path "$output/$module.doccarchive" \
        --warnings-as-errors
    echo "documentation built in $output/$module.doccarchive"
done

# The archives are built for static hosting: any web server shows them.
cat <<PREVIEW

To preview, serve an archive and browse to its module's page, for example:
    python3 -m http.server 8000 --directory $output/StateKit.doccarchive
    then http://localhost:8000/documentation/statekit (statekittesting, statekithttp likewise);
or let DocC rebuild the pages as you edit, at http://localhost:8080/documentation/statekit:
    docc preview Sources/StateKit/StateKit.docc --additional-symbol-graph-dir $scratch/symbol-graphs-StateKit \\
        --output-dir $scratch/preview
On macOS, 'open $output/StateKit.doccarchive' shows an archive in Xcode.
PREVIEW
