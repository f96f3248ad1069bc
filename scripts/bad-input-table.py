#!/usr/bin/python3
"""bad-input-table.py [BUILD_DIR]: the bad-input table of docs/reliability.md, from CTest itself.

Every test labelled bad_input (tests/CMakeLists.txt, ddp_expect_failure: tests/tools/expect-exit.sh
CODE REGEX COMMAND...) is listed by `ctest --show-only=json-v1`, run once more here in an empty
directory with its environment, and written as a row: the test, the command (paths shortened),
the exit code it gave and the one line it printed. A row whose exit code or line is not what the
test expects is marked. The section between <!-- begin bad-input --> and <!-- end bad-input -->
is replaced (bench/update_section.py)."""
import json
import os
import re
import subprocess
import sys
import tempfile

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build"))


def relative(text):
    return text.replace(os.path.join(build, ""), "").replace(os.path.join(root, ""), "")


def short(word):
    word = relative(word[len("/usr/bin/"):] if word.startswith("/usr/bin/") else word)
    return re.sub(r"^(launcher|profiler|comm|examples|tests/tools)/", "", word)


def cell(text):
    return text.replace("|", "\\|").replace("\n", " ")


def main():
    listing = subprocess.run(["ctest", "--test-dir", build, "-L", "bad_input", "--show-only=json-v1"],
                             capture_output=True, text=True, check=True)
    tests = json.loads(listing.stdout)["tests"]
    rows, bad = [], 0
    for t in tests:
        code, regex, command = int(t["command"][1]), t["command"][2], t["command"][3:]
        env = dict(os.environ)
        for p in t.get("properties", []):
            if p["name"] == "ENVIRONMENT":
                env.update(v.split("=", 1) for v in p["value"])
        with tempfile.TemporaryDirectory() as cwd:
            run = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
        line = run.stderr.strip().splitlines()[0] if run.stderr.strip() else ""
        line = relative(line)
        ok = run.returncode == code and re.search(regex, run.stderr)
        bad += not ok
        rows.append(f"| `{t['name']}` | `{cell(' '.join(short(w) for w in command))}` | {run.returncode} | "
                    f"{cell(line)}{'' if ok else ' **(not as the test expects)**'} |")
    print("## Bad input\n")
    print(f"{len(rows)} inputs, each a CTest labelled `bad_input` (`tests/CMakeLists.txt`, `tests/tools/expect-exit.sh`): "
          "one line on stderr, the exit code shown, nothing written into the working directory, no stack trace "
          "or abort. Written by `scripts/bad-input-table.py`, which runs each command again and shows what it printed.\n")
    print("| test | command | exit | the line it printed |")
    print("|---|---|---:|---|")
    print("\n".join(rows))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
