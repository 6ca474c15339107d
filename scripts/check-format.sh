#!/usr/bin/env bash
# Checks that every C++ source follows .clang-format (clang-format 14, Debian 12's). Lists the
# files that differ and exits 1; `scripts/check-format.sh --fix` rewrites them instead.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
fmt="$(command -v clang-format-14 || command -v clang-format || true)"
if [ -z "$fmt" ]; then
  echo "check-format: clang-format not found; install it with: sudo apt-get install clang-format" >&2
  exit 2
fi
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cc' '*.h' '*.cu' ':!tests/data')
if [ "${1:-}" = "--fix" ]; then
  "$fmt" -i --style=file "${files[@]}"
  exit 0
fi
bad=0
for f in "${files[@]}"; do
  if ! "$fmt" --style=file "$f" | cmp -s - "$f"; then
    echo "not formatted: $f"
    bad=1
  fi
done
if [ "$bad" -ne 0 ]; then
  echo "check-format: run scripts/check-format.sh --fix (clang-format $("$fmt" --version | grep -o '[0-9][0-9.]*' | head -1))" >&2
fi
exit "$bad"
