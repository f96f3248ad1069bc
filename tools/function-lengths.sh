#!/usr/bin/env bash
# function-lengths.sh [--max N] [--top K] [DIR...]: the C++ functions of DIR (default: common comm
# launcher profiler, under the repository root or the current directory) longest first, with their
# lines (Universal Ctags' start and end lines of each function definition). With --max N, exits 1
# when a function is longer than N lines, naming it.
set -euo pipefail
max=0 top=10 dirs=()
while [ $# -gt 0 ]; do
  case $1 in
    --max) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || { echo "function-lengths.sh: --max needs a line count" >&2; exit 2; }
      max=$2; shift 2 ;;
    --top) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || { echo "function-lengths.sh: --top needs a count" >&2; exit 2; }
      top=$2; shift 2 ;;
    -*) echo "function-lengths.sh: unknown option '$1'" >&2; exit 2 ;;
    *) [ -d "$1" ] || { echo "function-lengths.sh: no directory '$1'" >&2; exit 2; }
      dirs+=("$1"); shift ;;
  esac
done
[ ${#dirs[@]} -gt 0 ] || dirs=(common comm launcher profiler)
command -v ctags >/dev/null || { echo "function-lengths.sh: needs Universal Ctags (apt-get install universal-ctags)" >&2; exit 2; }
list=$(find "${dirs[@]}" \( -name '*.cpp' -o -name '*.hpp' \) -print | sort)
[ -n "$list" ] || { echo "function-lengths.sh: no C++ files in ${dirs[*]}" >&2; exit 2; }
# name TAB file TAB line TAB end, for every function definition.
table=$(echo "$list" | ctags -L - --languages=C++ --c++-kinds=f --fields=+ne -o - |
  awk -F'\t' '{ line = ""; end = ""; for (i = 4; i <= NF; ++i) { if ($i ~ /^line:/) line = substr($i, 6); if ($i ~ /^end:/) end = substr($i, 5) }
               if (line != "" && end != "") printf "%d\t%s:%s\t%s\n", end - line + 1, $2, line, $1 }' | sort -t$'\t' -k1,1nr)
# awk reads the whole table (head would stop early, and under pipefail the echo's SIGPIPE would
# end the script as if it had failed).
echo "$table" | awk -F'\t' -v n="$top" 'NR <= n { printf "%5d lines  %s  %s\n", $1, $3, $2 }'
echo "$(echo "$table" | wc -l) functions in ${dirs[*]}"
if [ "$max" -gt 0 ]; then
  over=$(echo "$table" | awk -F'\t' -v m="$max" '$1 > m')
  if [ -n "$over" ]; then
    echo "$over" | awk -F'\t' -v m="$max" '{ printf "function-lengths.sh: %s (%s) has %d lines, over %d\n", $3, $2, $1, m }' >&2
    exit 1
  fi
  echo "none over $max lines"
fi
