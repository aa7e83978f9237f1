#!/usr/bin/env python3
"""The layers of include/shardwise/ point one way.

Every header belongs to one row of the table below; a header may include headers of its
own row or of rows above it, never of a row below (that would be a layer reaching up).
The pure compile-time headers must not include MPI or Eigen, directly or through another
shardwise header: they can be used and tested by static_assert alone.

usage: check_layers.py INCLUDE_DIR     (the directory that holds shardwise/)
"""
import fnmatch
import pathlib
import re
import sys

# Rows, lowest first: (name, patterns relative to include/shardwise/).
LAYERS = [
    ("detail", ["detail/*.hpp"]),
    ("vocabulary", ["mesh.hpp", "sharding.hpp", "traffic.hpp", "version.hpp"]),
    ("layout", ["layout.hpp", "layout_policy.hpp", "ownership.hpp", "block_placement.hpp"]),
    ("plan", ["plan/*.hpp"]),
    ("comm", ["comm/*.hpp"]),
    ("groups", ["process_group_mesh.hpp", "launcher_environment.hpp", "parallel_context.hpp",
                "mpi_environment.hpp"]),
    ("kernels", ["kernels/*.hpp"]),
    ("operations", ["array_traits.hpp", "array_face.hpp", "distributed_array.hpp", "sharded_matrix.hpp", "sharded_tensor.hpp", "reshard.hpp", "matmul_core.hpp", "redistributed_matmul.hpp", "matmul.hpp", "einsum.hpp",
                    "view.hpp", "linalg.hpp"]),
    ("nn", ["nn/*.hpp"]),
    # ScaLAPACK interop: block-cyclic index maps, BLACS grids, p?gemm computed by shardwise.
    ("scalapack", ["scalapack/*.hpp", "scalapack/*.h"]),
    ("umbrella", ["core.hpp", "shardwise.hpp", "tensor.hpp", "compiled_runtime.hpp"]),
    # Google Benchmark under MPI: only MPI and the benchmark library, never included by the rest.
    ("bench", ["bench/*.hpp"]),
]

# Pure compile-time headers: no MPI, no Eigen, however indirectly.
PURE = ["detail/*.hpp", "mesh.hpp", "sharding.hpp", "traffic.hpp", "version.hpp", "layout.hpp", "layout_policy.hpp", "ownership.hpp",
        "block_placement.hpp", "array_traits.hpp", "plan/*.hpp",
        "launcher_environment.hpp", "nn/ffn_policy.hpp", "nn/pipeline_schedule.hpp",
        "scalapack/block_cyclic.hpp"]
FORBIDDEN_IN_PURE = re.compile(r"^(mpi\.h|Eigen/.*|unsupported/Eigen/.*|cblas\.h)$")

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.MULTILINE)


def row_of(name):
    for index, (_, patterns) in enumerate(LAYERS):
        if any(fnmatch.fnmatch(name, p) for p in patterns):
            return index
    return None


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    root = pathlib.Path(sys.argv[1]) / "shardwise"
    headers = sorted(str(p.relative_to(root)) for pattern in ("*.hpp", "*.h") for p in root.rglob(pattern))
    includes = {}
    for h in headers:
        text = (root / h).read_text(encoding="utf-8")
        includes[h] = [(kind, target) for kind, target in INCLUDE.findall(text)]
    problems = []
    for h in headers:
        if row_of(h) is None:
            problems.append(f"{h}: not in the layer table of tests/check_layers.py; give it a row")
    for h in headers:
        mine = row_of(h)
        for _, target in includes[h]:
            if not target.startswith("shardwise/"):
                continue
            other = target[len("shardwise/"):]
            theirs = row_of(other)
            if mine is not None and theirs is not None and theirs > mine:
                problems.append(f"{h} ({LAYERS[mine][0]}) includes {target} ({LAYERS[theirs][0]}), a layer above it")

    def reaches_forbidden(h, seen):
        for _, target in includes.get(h, []):
            if FORBIDDEN_IN_PURE.match(target):
                return [h, target]
            if target.startswith("shardwise/"):
                other = target[len("shardwise/"):]
                if other not in seen and other in includes:
                    seen.add(other)
                    path = reaches_forbidden(other, seen)
                    if path:
                        return [h] + path
        return None

    for h in headers:
        if any(fnmatch.fnmatch(h, p) for p in PURE):
            path = reaches_forbidden(h, {h})
            if path:
                problems.append(f"{h} is pure compile-time but includes {path[-1]} (through {' -> '.join(path[:-1])})")
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"{len(headers)} headers: every include points down the layers; the pure compile-time ones "
          "include neither MPI nor Eigen")
    return 0


if __name__ == "__main__":
    sys.exit(main())
