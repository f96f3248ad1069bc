#!/usr/bin/python3
"""check-skips.py JUNIT_XML: lists the tests CTest skipped (from ctest --output-junit) with the
reason each gave, and fails (exit 1) when one was skipped for anything but the GPU: a test that
needs a GPU reports "SKIP: no GPU ..." where there is none (and the no-GPU path "SKIP: a GPU is
present ..." where there is one). Any other skip — a missing tool, a test not run — is a failure,
so that a skip never hides a check that should have run."""
import re
import sys
import xml.etree.ElementTree as ET

GPU_REASON = re.compile(r"^SKIP: (no GPU|a GPU is present)", re.M)


def main():
    root = ET.parse(sys.argv[1]).getroot()
    skipped = []
    for case in root.iter("testcase"):
        if case.find("skipped") is None:
            continue
        out = case.findtext("system-out") or ""
        reason = next((line for line in out.splitlines() if line.startswith("SKIP:")), None)
        if reason is None:
            reason = "no reason given (" + (case.find("skipped").get("message") or "not run") + ")"
        skipped.append((case.get("name"), reason, bool(GPU_REASON.search(out))))
    print(f"skipped tests: {len(skipped)}")
    for name, reason, gpu in skipped:
        print(f"  {name}: {reason}{'' if gpu else '   <- not a GPU skip: a failure'}")
    return 0 if all(gpu for _, _, gpu in skipped) else 1


if __name__ == "__main__":
    sys.exit(main())
