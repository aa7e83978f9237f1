#!/usr/bin/env python3
"""The version is written in four places, and they agree.

Meson's project version (passed in), CMakeLists.txt's project(shardwise VERSION ...), the
newest released version in CHANGELOG.md (the first "## [X.Y.Z]" heading below
"## [Unreleased]") and the macros of include/shardwise/version.hpp
(SHARDWISE_VERSION_MAJOR, _MINOR, _PATCH and SHARDWISE_VERSION_STRING).

usage: check_version.py SOURCE_ROOT MESON_PROJECT_VERSION
"""
import os
import re
import sys


def read(source_root: str, name: str) -> str:
    with open(os.path.join(source_root, name), encoding="utf-8") as f:
        return f.read()


def header_version(text: str) -> tuple[str | None, list[str]]:
    """The version the macros spell, and what is wrong with them."""
    problems = []
    numbers = {}
    for part in ("MAJOR", "MINOR", "PATCH"):
        match = re.search(rf"^#define SHARDWISE_VERSION_{part} (\d+)\s*$", text, re.MULTILINE)
        if match is None:
            problems.append(f"no '#define SHARDWISE_VERSION_{part} <number>'")
        else:
            numbers[part] = match.group(1)
    if problems:
        return None, problems
    version = "{MAJOR}.{MINOR}.{PATCH}".format(**numbers)
    match = re.search(r'^#define SHARDWISE_VERSION_STRING "([^"]*)"\s*$', text, re.MULTILINE)
    if match is None:
        problems.append("no '#define SHARDWISE_VERSION_STRING \"X.Y.Z\"'")
    elif match.group(1) != version:
        problems.append(f'SHARDWISE_VERSION_STRING is "{match.group(1)}" but the numbers say {version}')
    return version, problems


def cmake_version(text: str) -> str | None:
    match = re.search(r"^project\(\s*shardwise\s+VERSION\s+([0-9][0-9.]*)", text, re.MULTILINE)
    return match.group(1) if match else None


def changelog_version(text: str) -> str | None:
    """The first version heading that is not Unreleased: '## [0.1.0] - 2026-11-23'."""
    for match in re.finditer(r"^## \[([^\]]+)\]", text, re.MULTILINE):
        if match.group(1).lower() != "unreleased":
            return match.group(1)
    return None


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    source_root, meson_version = sys.argv[1], sys.argv[2]
    header, problems = header_version(read(source_root, "include/shardwise/version.hpp"))
    found = {
        "meson.build (meson.project_version())": meson_version,
        "include/shardwise/version.hpp": header,
        "CMakeLists.txt (project VERSION)": cmake_version(read(source_root, "CMakeLists.txt")),
        "CHANGELOG.md (newest released version)": changelog_version(read(source_root, "CHANGELOG.md")),
    }
    problems = [f"include/shardwise/version.hpp: {p}" for p in problems]
    for where, version in found.items():
        if version is None and not where.startswith("include/"):
            problems.append(f"{where}: no version found")
        elif version is not None and version != meson_version:
            problems.append(f"{where} says {version}, meson.build says {meson_version}")
    for where, version in found.items():
        print(f"{version or '?':>8}  {where}")
    for problem in problems:
        print(problem)
    if problems:
        print("set the same version in all four places (a release also adds its CHANGELOG.md section)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
