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
# One clang-format process per 50 files, RDMQ_JOBS (default nproc) at a time (a process per
# file spent most of the check's time starting clang-format); its diagnostics name each file
# that differs.
present=()
for f in "${files[@]}"; do [[ -f $f ]] && present+=("$f"); done
out=$(printf '%s\n' "${present[@]}" |
  xargs -d '\n' -P "${RDMQ_JOBS:-$(nproc)}" -n 50 clang-format --dry-run --Werror 2>&1)
rc=$?
mapfile -t bad < <(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: .*/\1/p' <<<"$out" | sort -u)
if ((rc != 0 && ${#bad[@]} == 0)); then
  echo "format: clang-format failed:"
  head -n 20 <<<"$out"
  exit 1
fi
if ((${#bad[@]} > 0)); then
  echo "format: ${#bad[@]} file(s) differ from .clang-format (fix with tests/lint/format.sh --fix):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "format: ${#files[@]} files formatted as .clang-format says"
