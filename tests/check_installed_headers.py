#!/usr/bin/env python3
"""Every header under include/shardwise/ (.hpp, and .h for C) is installed, at the same path
under the prefix.

Reads the install plan Meson wrote for this build (meson-info/intro-installed.json), so a
header missing from include/meson.build fails here instead of in a user's build. Also
checks that the companion library, the pkg-config files and the CMake package are in the plan.

usage: check_installed_headers.py SOURCE_ROOT BUILD_ROOT
"""
import json
import os
import sys


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    source_root, build_root = (os.path.realpath(p) for p in sys.argv[1:])
    info = os.path.join(build_root, "meson-info")
    with open(os.path.join(info, "intro-installed.json"), encoding="utf-8") as f:
        plan = {os.path.realpath(src): dst for src, dst in json.load(f).items()}
    with open(os.path.join(info, "intro-buildoptions.json"), encoding="utf-8") as f:
        options = {o["name"]: o["value"] for o in json.load(f)}
    include_dir = os.path.join(options["prefix"], options["includedir"])

    headers_root = os.path.join(source_root, "include")
    problems = []
    for directory, _, names in os.walk(os.path.join(headers_root, "shardwise")):
        for name in sorted(names):
            if not name.endswith((".hpp", ".h")):
                continue
            header = os.path.join(directory, name)
            relative = os.path.relpath(header, headers_root)
            expected = os.path.join(include_dir, relative)
            installed = plan.get(header)
            if installed is None:
                problems.append(f"{relative} is not installed: add it to include/meson.build")
            elif os.path.normpath(installed) != expected:
                problems.append(f"{relative} is installed as {installed}, expected {expected}")
    installed_names = {os.path.basename(dst) for dst in plan.values()}
    for name in ["libshardwise_runtime.a", "shardwise.pc", "shardwise-header-only.pc",
                 "shardwiseConfig.cmake", "shardwiseConfigVersion.cmake"]:
        if name not in installed_names:
            problems.append(f"{name} is not installed")

    for problem in problems:
        print(problem)
    if problems:
        return 1
    count = sum(1 for src in plan if src.startswith(headers_root + os.sep))
    print(f"{count} headers, libshardwise_runtime.a, the .pc files and the CMake package are installed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
