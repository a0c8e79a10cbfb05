#!/usr/bin/env bash
# Compiles every page of Playgrounds/*.playground against the built StateKit module and runs it.
#
# Nothing runs Xcode playgrounds on Linux, so CI does this instead: a page that no longer
# compiles (with warnings as errors, in Swift 6 mode), crashes, or hangs fails the run. Each page
# becomes a small executable linked with StateKit's object files; pages run in order and print
# their output under a header. Usage: Scripts/run-playgrounds.sh [page-name-substring ...]
set -euo pipefail

cd "$(dirname "$0")/.."

swift build --target StateKit >/dev/null
bin_path="$(swift build --show-bin-path)"
objects=("$bin_path"/StateKit.build/*.o)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

failures=0
pages=0
for playground in Playgrounds/*.playground; do
    manifest="$playground/contents.xcplayground"
    for page in "$playground"/Pages/*.xcplaygroundpage; do
        name="$(basename "$page" .xcplaygroundpage)"
        if [[ $# -gt 0 ]]; then
            wanted=false
            for filter in "$@"; do [[ "$name" == *"$filter"* ]] && wanted=true; done
            $wanted || continue
        fi
        pages=$((pages + 1))
        echo "== $playground: $name"
        if ! grep -q "<page name='$name'/>" "$manifest"; then
            echo "error: $name is not listed in $manifest" >&2
            failures=$((failures + 1))
            continue
        fi
        executable="$work/$(echo "$name" | tr -c 'A-Za-z0-9\n' '_')"
        # Module cache in the work directory: pages compile in parallel-safe isolation.
        if ! swiftc -swift-version 6 -warnings-as-errors -Onone \
            -module-cache-path "$work/module-cache" \
            -I "$bin_path/Modules" \
            "$page/Contents.swift" "${objects[@]}" \
            -o "$executable" 2>"$work/compile.log"; then
            cat "$work/compile.log" >&2
            echo "error: $name does not compile" >&2
            failures=$((failures + 1))
            continue
        fi
        if ! timeout 60 "$executable"; then
            echo "error: $name crashed, failed or hung (60 s)" >&2
            failures=$((failures + 1))
        fi
    done
done

if [[ $pages -eq 0 ]]; then
    echo "error: no playground pages found" >&2
    exit 1
fi
if [[ $failures -gt 0 ]]; then
    echo "$failures of $pages playground pages failed" >&2
    exit 1
fi
echo "all $pages playground pages compiled and ran"
