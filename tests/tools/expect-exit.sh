#!/usr/bin/env bash
# expect-exit.sh CODE REGEX COMMAND...: passes when COMMAND exits with CODE and its stderr has
# exactly one line, matching REGEX (extended), having written nothing into its working
# directory (a fresh empty one).
set -u
code=$1 regex=$2
shift 2
err=$(mktemp)
cwd=$(mktemp -d)
(cd "$cwd" && exec "$@") >/dev/null 2>"$err"
rc=$?
left=$(ls -A "$cwd")
rm -rf "$cwd"
if [ -n "$left" ]; then echo "it left files behind: $left"; exit 1; fi
lines=$(grep -c . "$err")
msg=$(cat "$err")
rm -f "$err"
if [ "$rc" -ne "$code" ]; then echo "expected exit $code, got $rc; stderr: $msg"; exit 1; fi
if ! grep -Eq -- "$regex" <<<"$msg"; then echo "stderr does not match /$regex/: $msg"; exit 1; fi
# mpirun adds its own report after a rank's line; a lone program must print one line.
if [[ "$(basename "$1")" != mpi* ]] && [ "$lines" -ne 1 ]; then echo "expected one line, got $lines: $msg"; exit 1; fi
echo "ok: exit $rc: $msg"
