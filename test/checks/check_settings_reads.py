#!/usr/bin/env python3
"""Checks that settings are read only through the table of settings: no C++
file of the library or the bindings outside horovodcpp/settings/ calls
getenv(), and no C++ file anywhere (hvdrun included) calls it for a
HOROVOD* variable.

usage: check_settings_reads.py REPOSITORY_ROOT
"""
import pathlib
import re
import sys

GETENV = re.compile(r"\bgetenv\s*\(([^)]*)\)")


def main():
    root = pathlib.Path(sys.argv[1])
    problems = []
    for folder in ("horovodcpp", "bindings", "runner"):
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in (".cc", ".h", ".cu", ".cpp"):
                continue
            relative = path.relative_to(root).as_posix()
            if relative.startswith("horovodcpp/settings/"):
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                for call in GETENV.finditer(line):
                    if folder != "runner" or "HOROVOD" in call.group(1):
                        problems.append(f"{relative}:{number}: {line.strip()}")
    for problem in problems:
        print(problem)
    if problems:
        sys.exit("read these through horovodcpp/settings/settings.h (add the setting to "
                 "settings_table.cc)")


if __name__ == "__main__":
    main()
