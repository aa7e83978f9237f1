#!/usr/bin/env python3
"""A C++ block of the README must be a source file as written (the file is built, and run as a
test, so a reader who copies the block gets a program that compiles and works). Passes when the
block appears verbatim in the file.

usage: check_readme_example.py README.md FILE [--block-containing TEXT] [--between-markers]

Without --block-containing, the README's first ```cpp block (examples/hello_matmul.cpp); with it,
the first ```cpp block that contains TEXT (e.g. mpi_benchmark_main: benchmarks/my_bench.cpp).
With --between-markers the block must be, line for line, what FILE holds between the lines
`// ---- begin README block ----` and `// ---- end README block ----` (a test that declares the
block's variables and runs it), the indentation they share removed. Any Markdown page can stand
for README.md (docs/arrays.md).
"""
import argparse
import re
import sys
import textwrap

BEGIN = "// ---- begin README block ----"
END = "// ---- end README block ----"


def marked_block(source: str):
    """The lines between the markers, dedented, or None."""
    lines = source.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.strip() == BEGIN]
    ends = [i for i, line in enumerate(lines) if line.strip() == END]
    if not starts or not ends or ends[0] <= starts[0]:
        return None
    return textwrap.dedent("".join(lines[starts[0] + 1:ends[0]]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("readme")
    parser.add_argument("source")
    parser.add_argument("--block-containing", default=None, metavar="TEXT",
                        help="check the first C++ block that contains TEXT instead of the first one")
    parser.add_argument("--between-markers", action="store_true",
                        help="the block must be FILE's lines between the README block markers")
    args = parser.parse_args()
    with open(args.readme, encoding="utf-8") as f:
        blocks = re.findall(r"```cpp\n(.*?)```", f.read(), re.S)
    with open(args.source, encoding="utf-8") as f:
        source = f.read()
    which = "first C++ block"
    if args.block_containing is not None:
        blocks = [b for b in blocks if args.block_containing in b]
        which = f"first C++ block with {args.block_containing!r}"
    if not blocks:
        print(f"{args.readme}: no {which}")
        return 1
    if args.between_markers:
        marked = marked_block(source)
        if marked is None:
            print(f"{args.source}: no lines between {BEGIN!r} and {END!r}")
            return 1
        if blocks[0] != marked:
            print(f"{args.readme}: its {which} differs from {args.source}'s lines between the markers; "
                  "keep the two in step")
            return 1
        print(f"{args.readme}: the {which} is what {args.source} runs between its markers")
        return 0
    if blocks[0] not in source:
        print(f"{args.readme}: its {which} is not in {args.source}; keep the two in step")
        return 1
    print(f"{args.readme}: the {which} is {args.source} as written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
