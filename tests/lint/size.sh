#!/usr/bin/env bash
# Fails when a C++ source file that git tracks (or would add) is over the project's size limit:
# a file holds one concept, and past 800 lines it holds several.
#
#   tests/lint/size.sh            check every .cc/.h file
#   RDMQ_MAX_LINES=N              another limit (default 800)
set -uo pipefail
cd "$(dirname "$0")/../.."
limit=${RDMQ_MAX_LINES:-800}
mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.cc' '*.h' | sort -u)
bad=0
for f in "${files[@]}"; do
  [[ -f $f ]] || continue
  n=$(wc -l <"$f")
  if ((n > limit)); then
    echo "size: $f has $n lines (limit $limit): split it into files of one concept each"
    bad=$((bad + 1))
  fi
done
if ((bad > 0)); then
  echo "size: $bad file(s) over $limit lines"
  exit 1
fi
echo "size: ${#files[@]} files, none over $limit lines"
