#!/bin/sh
# Counts the instructions of one StateKit scenario with callgrind (repeatable on a busy machine).
# Usage: Benchmarks/Scripts/profile.sh <read|readBound|writeAfterRead|write0|write1|write10|hook|fanout|fanout10k|fanoutTree|fanoutTree10k|writeThrough100|writeThrough10k|samePath|fanoutStored|subscribe1k|subscribe10k|churn|subscribe|plain2|transaction2|plain10|transaction10|relay|derived2|combine2|chain|chainCutoff|persistedWrite|sharedModify|syncedWrite|join|inspected0|inspected1|watched0|watched1> [operations]
# Prints instructions per operation, then the top functions (inclusive) of the measured loop.
set -eu
package="$(dirname "$0")/.."
scenario="${1:-write1}"
count="${2:-10000}"
swift build -c release --package-path "$package" --product StateKitProfile >/dev/null
binary="$package/.build/release/StateKitProfile"
out="$(mktemp -d)/callgrind.out"
valgrind --tool=callgrind --callgrind-out-file="$out" --collect-atstart=no \
    --toggle-collect='*measured*' "$binary" "$scenario" "$count" >/dev/null 2>&1
total=$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
echo "$scenario: $total instructions for $count operations = $((total / count)) per operation"
filter='/^Ir  *file:function/,/^-- Auto/p'
echo "-- inclusive:"
callgrind_annotate --inclusive=yes "$out" 2>/dev/null | sed -n "$filter" \
    | grep -v 'main.swift\|libc-start\|below main\|ld-linux\|StateKitProfile_main' | head -25 | cut -c1-200
echo "-- self (exclusive):"
callgrind_annotate "$out" 2>/dev/null | sed -n "$filter" | head -20 | cut -c1-200
