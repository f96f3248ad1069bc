#!/usr/bin/env bash
# skip-unless-dir.sh DIR COMMAND...: runs COMMAND when DIR exists, else exits 77 (CTest: skipped).
dir=$1
shift
if [ ! -d "$dir" ]; then echo "skipped: $dir is not here"; exit 77; fi
exec "$@"
