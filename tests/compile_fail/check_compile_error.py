#!/usr/bin/env python3
"""Negative compile test: passes only if compiling SOURCE fails with the expected text.

The expected text is every line of SOURCE that starts with `// expect: `; each must
appear in the compiler's output. A program that compiles, or fails for another
reason, fails the test.

usage: check_compile_error.py SOURCE -- COMPILER [ARGS...]
"""
import subprocess
import sys


def main() -> int:
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        print(__doc__)
        return 2
    source, command = sys.argv[1], sys.argv[3:]
    with open(source, encoding="utf-8") as f:
        expected = [line.split("// expect:", 1)[1].strip()
                    for line in f if line.startswith("// expect:")]
    if not expected:
        print(f"{source}: no '// expect:' line, nothing to check")
        return 2
    result = subprocess.run(command + ["-fsyntax-only", source],
                            capture_output=True, text=True, check=False)
    output = result.stdout + result.stderr
    if result.returncode == 0:
        print(f"{source}: compiled, but it must not")
        return 1
    missing = [text for text in expected if text not in output]
    if missing:
        print(f"{source}: failed to compile, but without the expected message")
        for text in missing:
            print(f"  missing: {text}")
        print("---- compiler output (first 60 lines) ----")
        print("\n".join(output.splitlines()[:60]))
        return 1
    print(f"{source}: fails to compile with the intended message")
    return 0


if __name__ == "__main__":
    sys.exit(main())
