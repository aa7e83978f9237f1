#!/usr/bin/env python3
"""Negative compile test: passes only if compiling SOURCE fails with the expected text.

The expected text is every line of SOURCE that starts with `// expect: `; each must
appear in the compiler's output. A program that compiles, or fails for another
reason, fails the test.

Strict rule (the default): the first line of the output that reports an error (g++ and
clang++ both write "error:") must contain the first `// expect:` text, because that line
is the one a user reads. A source whose first error is not yet the library's message
says so with a line `// first-error: not yet` and is held to the other checks only;
the line is a to-do, not a waiver: remove it once the first error is right.

A line `// expect-beside-first-error: TEXT` asks for TEXT (e.g. the misspelt name, which a
static_assert message cannot hold) in the first error line or in the notes that belong to it
(the diagnostics after it up to the next error, such as g++'s note on what evaluated to
false, or clang's note on the instantiation), so that it is where the user reads. A line `// expect-on-first-error: TEXT` asks for TEXT on
the first error line itself (a misspelt axis name: the library reports it as an incomplete
type that holds the name).

A line `// single-error` asks for exactly one error line: the library's message, with no
cascade of follow-on errors after it.

usage: check_compile_error.py SOURCE -- COMPILER [ARGS...]
"""
import re
import subprocess
import sys

ERROR_MARK = "error:"
NOT_YET_MARK = "// first-error: not yet"
BESIDE_MARK = "// expect-beside-first-error:"
ON_FIRST_MARK = "// expect-on-first-error:"
SINGLE_MARK = "// single-error"
DIAGNOSTIC = re.compile(r"^\S.*:\d+:\d+: (error|warning|note):")


def first_error_line(output: str):
    for line in output.splitlines():
        if ERROR_MARK in line:
            return line
    return None


def first_error_and_its_notes(output: str):
    """The first error line and the diagnostic lines after it up to the next error."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if ERROR_MARK in line:
            notes = []
            for later in lines[i + 1:]:
                if ERROR_MARK in later:
                    break
                if DIAGNOSTIC.match(later):
                    notes.append(later)
            return [line] + notes
    return [""]


def main() -> int:
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        print(__doc__)
        return 2
    source, command = sys.argv[1], sys.argv[3:]
    with open(source, encoding="utf-8") as f:
        lines = f.readlines()
    expected = [line.split("// expect:", 1)[1].strip() for line in lines if line.startswith("// expect:")]
    beside = [line.split(BESIDE_MARK, 1)[1].strip() for line in lines if line.startswith(BESIDE_MARK)]
    on_first = [line.split(ON_FIRST_MARK, 1)[1].strip() for line in lines if line.startswith(ON_FIRST_MARK)]
    single = any(line.startswith(SINGLE_MARK) for line in lines)
    strict = not any(line.startswith(NOT_YET_MARK) for line in lines)
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
    first = first_error_line(output)
    first_ok = first is not None and expected[0] in first
    region = first_error_and_its_notes(output)
    not_beside = [text for text in beside if not any(text in line for line in region)]
    not_on_first = [text for text in on_first if first is None or text not in first]
    error_lines = [line for line in output.splitlines() if ERROR_MARK in line]
    cascade = single and len(error_lines) != 1
    if missing or not_beside or not_on_first or cascade or (strict and not first_ok):
        print(f"{source}: failed to compile, but without the expected message")
        for text in missing:
            print(f"  missing: {text}")
        for text in not_beside:
            print(f"  not in the first error line nor in its notes: {text}")
            print("  (those are:\n    " + "\n    ".join(region) + ")")
        for text in not_on_first:
            print(f"  not on the first error line: {text}")
        if cascade:
            print(f"  {len(error_lines)} error lines, but only the library's one may be reported:")
            print("    " + "\n    ".join(error_lines))
        if strict and not first_ok:
            print(f"  the first error line does not contain: {expected[0]}")
            print(f"  first error line: {first}")
        print("---- compiler output (first 60 lines) ----")
        print("\n".join(output.splitlines()[:60]))
        return 1
    if not strict:
        print(f"{source}: fails with the intended message (first error not checked: {NOT_YET_MARK})")
        print(f"  first error line: {first}")
        return 0
    print(f"{source}: fails to compile with the intended message, on the first error line")
    return 0


if __name__ == "__main__":
    sys.exit(main())
