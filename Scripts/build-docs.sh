#!/usr/bin/env bash
# Builds the StateKit DocC catalog with warnings as errors, so every symbol link must resolve.
#
# No plugin needed: the compiler emits symbol graphs, then `docc convert` renders the catalog.
# The symbol-graph build uses its own scratch path so it does not invalidate the normal build.
# Usage: Scripts/build-docs.sh [output-directory]   (default: .build/docs/StateKit.doccarchive)
set -euo pipefail

cd "$(dirname "$0")/.."

scratch=".build/docs"
symbol_graphs="$scratch/symbol-graphs"
output="${1:-$scratch/StateKit.doccarchive}"

build_symbol_graphs() {
    swift build --target StateKit --scratch-path "$scratch" \
        -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$symbol_graphs" >/dev/null
}

# The compiler writes symbol graphs only when it compiles the module; an up-to-date build writes
# none, so keep the directory between runs, and force a rebuild if the graphs are missing.
mkdir -p "$symbol_graphs"
build_symbol_graphs
if [[ ! -f "$symbol_graphs/StateKit.symbols.json" ]]; then
    rm -rf "$scratch/debug/StateKit.build"
    build_symbol_graphs
fi

docc convert Sources/StateKit/StateKit.docc \
    --additional-symbol-graph-dir "$symbol_graphs" \
    --fallback-display-name StateKit \
    --fallback-bundle-identifier org.statekit.StateKit \
    --output-path "$output" \
    --warnings-as-errors
echo "documentation built in $output"
