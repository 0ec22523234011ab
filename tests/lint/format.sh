#!/usr/bin/env bash
# Fails when a C++ file that git tracks (or would add) is not formatted as .clang-format says.
#
#   tests/lint/format.sh          check every file, list the ones clang-format would change
#   tests/lint/format.sh --fix    format them in place
set -uo pipefail
cd "$(dirname "$0")/../.."
mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.cc' '*.h' | sort -u)
if [[ ${1:-} == --fix ]]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  [[ -f $f ]] || continue
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done
if ((${#bad[@]} > 0)); then
  echo "format: ${#bad[@]} file(s) differ from .clang-format (fix with tests/lint/format.sh --fix):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "format: ${#files[@]} files formatted as .clang-format says"
