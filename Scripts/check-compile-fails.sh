#!/usr/bin/env bash
# Checks that the habits users bring from Combine, swift-sharing and Observation fail to compile
# with a message that names StateKit's API, so that a later change cannot silently lose the hints.
# Usage: Scripts/check-compile-fails.sh [--scratch-path DIR]   (default: .build)
#
# Each Scripts/compile-fails/*.swift is one user's file, type-checked on its own against the built
# StateKit module (`swiftc -typecheck`, all files in parallel, a few seconds in all). A line that
# must fail ends with a comment naming a substring of its error:
#
#   let subscription = counter.sink { print($0) }   // error: use subscribe(_:)
#
# The check fails when a marked line has no error containing its text, when an unmarked line has
# an error (a snippet must fail only where it says), or when a file compiles. A mistake the
# compiler cannot be steered on is marked `// gotcha: TEXT` instead: the error must contain TEXT,
# and Sources/StateKit/StateKit.docc/Essentials/Gotchas.md must quote it, so that the quote follows
# the compiler. Warnings and notes are ignored. Add a snippet when you add a hint.
set -euo pipefail

cd "$(dirname "$0")/.."
exec python3 -B Scripts/compile-fails/check.py "$@"
