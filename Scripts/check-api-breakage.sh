#!/usr/bin/env bash
# Fails when the public API of StateKit, StateKitTesting or StateKitHTTP lost or changed something
# since the baseline commit recorded in .api-baseline (its header says how a deliberate break is
# recorded). Usage:
#   Scripts/check-api-breakage.sh                  check against the baseline
#   Scripts/check-api-breakage.sh --move-to REF    make REF (a tag, say) the baseline and drop the
#                                                  recorded breakages, which REF includes
#
# `swift package diagnose-api-breaking-changes` builds the baseline in a clone under .build and
# compares the modules' API; the baseline's API is kept in .build/api-baseline, so only the first
# run for a baseline builds it (about half a minute on a 2-core machine; later runs take seconds).
set -euo pipefail

cd "$(dirname "$0")/.."

if [[ ${1:-} == --move-to ]]; then
    commit=$(git rev-parse --verify "${2:?usage: $0 --move-to REF}^{commit}")
    awk '!/^#/ { exit } { print }' .api-baseline > .api-baseline.new   # the header comment
    echo "$commit" >> .api-baseline.new
    mv .api-baseline.new .api-baseline
    echo "the API baseline is now $commit ($(git log -1 --format='%cs %s' "$commit" | cut -c1-80))"
    exit 0
fi

baseline=$(grep -Ev '^(#|API breakage:|[[:space:]]*$)' .api-baseline | head -n 1)
if [[ -z $baseline ]]; then
    echo "error: .api-baseline names no baseline commit" >&2
    exit 1
fi
if ! git cat-file -e "$baseline^{commit}" 2>/dev/null; then
    echo "error: the API baseline $baseline (.api-baseline) is not in this clone." >&2
    echo "       Clone with full history (or 'git fetch --unshallow'), or move the baseline." >&2
    exit 1
fi

allowlist=$(mktemp)
trap 'rm -f "$allowlist" "$allowlist.log"' EXIT
grep -E '^API breakage:' .api-baseline > "$allowlist" || true

echo "baseline: $baseline ($(git log -1 --format='%cs %s' "$baseline" | cut -c1-80))"
status=0
swift package diagnose-api-breaking-changes "$baseline" \
    --products StateKit StateKitTesting StateKitHTTP \
    --baseline-dir ".build/api-baseline/$baseline" \
    --breakage-allowlist-path "$allowlist" > "$allowlist.log" 2>&1 || status=$?
# The build's progress lines and its warnings about the baseline's .docc folders are noise.
grep -Ev '^\[[0-9]+/[0-9]+\]|unhandled; explicitly declare them|apidiff/.*-checkout/' "$allowlist.log" || true
exit $status
