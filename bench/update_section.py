#!/usr/bin/python3
"""update_section.py FILE NAME: replaces the part of FILE between <!-- begin NAME --> and
<!-- end NAME --> with stdin (appending the section when it is not there yet), so each benchmark
script regenerates only its own part of docs/benchmarks.md."""
import os
import sys

path, name = sys.argv[1], sys.argv[2]
begin, end = f"<!-- begin {name} -->", f"<!-- end {name} -->"
body = sys.stdin.read().rstrip("\n")
block = f"{begin}\n{body}\n{end}"
text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
if begin in text and end in text:
    head, rest = text.split(begin, 1)
    text = head + block + rest.split(end, 1)[1]
else:
    text = text.rstrip("\n") + "\n\n" + block + "\n"
tmp = path + ".tmp"
with open(tmp, "w") as f:
    f.write(text)
os.replace(tmp, path)
