#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Fails when a source file of the repository lacks its SPDX-License-Identifier
# line in its first three lines (LICENSE says which files are dual-licensed).
# Data (recordings, corpora, goldens) and documentation are not source.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=0
while IFS= read -r f; do
  [ -f "$f" ] || continue
  if ! head -n 3 "$f" | grep -q 'SPDX-License-Identifier: '; then
    echo "check-spdx: $f: no SPDX-License-Identifier line in its first 3 lines" >&2
    missing=$((missing + 1))
  fi
done < <(git ls-files -co --exclude-standard -- \
  '*.c' '*.h' '*.cc' '*.py' '*.sh' '*.sql' '*.proto' '*.js' '*.zeek' '*.cmake' '*.in' \
  'CMakeLists.txt' '*/CMakeLists.txt' '.ci/run' | grep -v '^tests/fuzz/corpus/')
if [ "$missing" -gt 0 ]; then
  echo "check-spdx: $missing source files without an SPDX line" >&2
  exit 1
fi
echo "check-spdx: every source file names its license"
