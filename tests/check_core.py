#!/usr/bin/env python3
"""shardwise/core.hpp stays the core: no nn/, no sharding planner, however indirectly.

Preprocesses a unit that includes only <shardwise/core.hpp> with the compiler's -M (the list
of every file it reads; -MG lists a header it cannot find, such as mpi.h or Eigen's, instead of
failing, so no dependency's flags are needed) and fails if a header under shardwise/nn/ or one
of the planner's (plan/sharding_planner.hpp and what only it includes) is among them. Both
ways a program compiles shardwise: header-only and with SHARDWISE_SEPARATE_COMPILATION. As a
control, the same list for <shardwise/shardwise.hpp> must hold the planner and nn/ (else the
check could not see them), and core.hpp's must hold what core.hpp promises (linalg, einsum,
matmul, view).

usage: check_core.py INCLUDE_DIR -- COMPILER [ARGS...]
"""
import os
import re
import subprocess
import sys
import tempfile

FORBIDDEN = re.compile(
    r"shardwise/(nn/[^/\s]+\.hpp|plan/(sharding_planner|matmul_search|matmul_any_mesh|matmul_by_time|planned_matmul|"
    r"matmul_kernels|matmul_outputs|matmul_evaluation|matmul_choice)\.hpp)$")
PROMISED = ["shardwise/linalg.hpp", "shardwise/einsum.hpp", "shardwise/matmul.hpp", "shardwise/view.hpp",
            "shardwise/sharded_tensor.hpp", "shardwise/reshard.hpp", "shardwise/parallel_context.hpp"]


def headers_read(compiler, include_dir, header, defines):
    with tempfile.TemporaryDirectory() as work:
        unit = os.path.join(work, "unit.cpp")
        with open(unit, "w", encoding="utf-8") as f:
            f.write(f"#include <shardwise/{header}>\n")
        command = compiler + ["-std=c++20", "-I" + include_dir] + defines + ["-M", "-MG", unit]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            sys.exit(f"check_core.py: {' '.join(command)} failed:\n{done.stderr}")
        words = done.stdout.replace("\\\n", " ").split()
        return [os.path.normpath(w) for w in words[1:]]  # words[0] is the target "unit.o:"


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        print(__doc__)
        return 2
    include_dir, compiler = sys.argv[1], sys.argv[3:]
    problems = []
    for defines in ([], ["-DSHARDWISE_SEPARATE_COMPILATION=1"]):
        mode = " ".join(defines) or "header-only"
        core = headers_read(compiler, include_dir, "core.hpp", defines)
        for path in core:
            if FORBIDDEN.search(path.replace(os.sep, "/")):
                problems.append(f"core.hpp ({mode}) reads {path}: nn/ and the sharding planner stay out of the core")
        for promised in PROMISED:
            if not any(p.replace(os.sep, "/").endswith(promised) for p in core):
                problems.append(f"core.hpp ({mode}) does not read {promised}")
        full = headers_read(compiler, include_dir, "shardwise.hpp", defines)
        if not any(FORBIDDEN.search(p.replace(os.sep, "/")) for p in full):
            problems.append(f"control: shardwise.hpp ({mode}) reads no nn/ or planner header: the check sees nothing")
    for p in problems:
        print(p)
    if problems:
        return 1
    print("core.hpp includes neither nn/ nor the sharding planner (header-only and separate compilation)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
