#!/usr/bin/env python3
"""The README's first C++ block must be examples/hello_matmul.cpp as written (the example is
built and run under mpiexec as a test, so a reader who copies the block gets a program that
works). Passes when the block appears verbatim in the example file.

usage: check_readme_example.py README.md examples/hello_matmul.cpp
"""
import re
import sys


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    with open(sys.argv[1], encoding="utf-8") as f:
        blocks = re.findall(r"```cpp\n(.*?)```", f.read(), re.S)
    with open(sys.argv[2], encoding="utf-8") as f:
        example = f.read()
    if not blocks:
        print(f"{sys.argv[1]}: no ```cpp block")
        return 1
    if blocks[0] not in example:
        print(f"{sys.argv[1]}: its first C++ block is not in {sys.argv[2]}; keep the two in step")
        return 1
    print(f"{sys.argv[1]}: the first C++ block is {sys.argv[2]} as written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
