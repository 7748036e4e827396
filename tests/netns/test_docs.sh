#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# README.md and docs/*.md: every relative link resolves to a file of the
# repository (a #fragment to a heading), no link leaves the repository,
# the README's table of contents matches its headings, and NFR-1/2/3 are
# defined where first used. Needs python3 only: no root, no build.
#
# Usage: test_docs.sh [BUILD_DIR]   (prints TAP lines: ok - / not ok -;
# BUILD_DIR is not used)
set -u
here=$(cd "$(dirname "$0")" && pwd)
exec python3 "$here/docs_check.py" "$here/../.."
