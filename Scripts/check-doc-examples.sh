#!/usr/bin/env bash
# Compiles every ```swift example of the documentation, and runs the ones that show their output,
# like Rust's doctests. Usage: Scripts/check-doc-examples.sh
#
# What is checked: every ```swift block of README.md and of the DocC catalogs
# (Sources/*/*.docc/**/*.md, subfolders included). Each block becomes one Swift file of a generated package in
# .build/doc-examples that depends on this package by path, so examples compile against the
# public API exactly as a user's code does. Blocks are independent of each other, like doctests.
#
# How a block becomes a file: types, extensions, protocols, imports and `@Test` functions that
# start in column 0 go to file scope (named types, and extensions that add no conformance, made
# `fileprivate` so that examples do not clash); every other line goes, in order, into an `async
# throws` function of its own, so `try` and `await` work as at top level. `import StateKit` is implied. Compiler errors point at the
# documentation's own lines.
#
# Conventions (HTML comments, which DocC and GitHub do not render, on the lines right before a
# block):
#   <!-- no-check: REASON -->   the block is not compiled; the reason is required and printed
#                                (for example "a Package.swift fragment").
#   <!-- prelude: CODE -->       hidden code run before the block, in the same scope
#                                (may span lines).
#   <!-- continues -->           the block continues the previous checked block of the document:
#                                one scope, so it sees the earlier block's names.
#   <!-- output -->              on a ```text block: the output of the previous ```swift block
#                                (with what it continues). The example is run and its standard
#                                output compared line by line (trailing spaces ignored). A
#                                ```text block directly after a ```swift block, with only blank
#                                lines between, needs no marker.
#
# Hidden setup shared by a document's examples (the model types, a `directory`, a `counter`)
# lives in a prelude file named after the document:
#   Scripts/doc-examples/preludes/README.swift                                  for README.md
#   Scripts/doc-examples/preludes/<the article's path, .md replaced by .swift>    for an article,
#     such as Scripts/doc-examples/preludes/Sources/StateKit/StateKit.docc/Essentials/Recipes.swift
#     for Sources/StateKit/StateKit.docc/Essentials/Recipes.md (the catalog's folders mirrored)
# A prelude file is Swift at file scope (declarations, `let` constants, imports); its
# declarations are made `fileprivate`, and any a block declares itself (same name) are left out
# for that block, so a block that shows its own model still compiles. To add an example that
# needs setup: write the example as a reader would copy it, then put what it assumes into the
# document's prelude file (create it if there is none), or, for a one-off, a `prelude` comment.
#
# `--with-symbol-comments` also checks the ```swift blocks of `///` comments in Sources, with the
# prelude file Scripts/doc-examples/preludes/Sources/<Module>.swift.
set -euo pipefail

cd "$(dirname "$0")/.."
exec python3 -B Scripts/doc-examples/check.py "$@"
