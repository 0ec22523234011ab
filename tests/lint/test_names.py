#!/usr/bin/env python3
"""Fails when a Catch2 test name cannot pass through CTest whole.

catch_discover_tests hands each test's name to CTest as a list element, so a ';' in a name
splits it into two tests whose filters match nothing (they ran nothing and, before
--warn NoTests, passed). A name must also be unique in its binary and not empty; Catch refuses
duplicates only when the binary starts.

  tests/lint/test_names.py          check every test source that git tracks (or would add)
"""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
# TEST_CASE( or TEMPLATE_TEST_CASE( followed by one or more adjacent string literals, which
# clang-format may have spread over several lines.
CASE = re.compile(r'\b(?:TEMPLATE_)?TEST_CASE\s*\(\s*((?:"(?:[^"\\\n]|\\.)*"\s*)+)')
LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def names(text):
    for m in CASE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        yield line, "".join(LITERAL.findall(m.group(1)))


def main():
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", "tests/*.cc"],
        cwd=ROOT, check=True, capture_output=True, text=True).stdout.split()
    bad, count = 0, 0
    for rel in sorted(set(files)):
        path = ROOT / rel
        if not path.is_file():
            continue
        for line, name in names(path.read_text(encoding="utf-8")):
            count += 1
            where = f"{rel}:{line}"
            problem = None
            if not name.strip():
                problem = "is empty"
            elif ";" in name:
                problem = "contains ';', which CTest reads as a list separator"
            elif name != name.strip():
                problem = "starts or ends with a space"
            if problem:
                print(f"test-names: {where}: the test name {name!r} {problem}")
                bad += 1
    if bad:
        print(f"test-names: {bad} bad test name(s)")
        return 1
    print(f"test-names: {count} test names, all pass through CTest whole")
    return 0


if __name__ == "__main__":
    sys.exit(main())
