#!/usr/bin/env python3
"""Runs a program and checks what it prints.

    check_output.py --expect TEXT [--expect TEXT ...] [--reject TEXT ...] -- program args...

Passes when the program exits with 0, its standard output and error together contain every
--expect text, and none of the --reject texts. Prints the output either way, so that a
failing test shows what the program said.
"""
import argparse
import subprocess
import sys


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--expect", action="append", default=[], help="text the output must contain")
    parser.add_argument("--reject", action="append", default=[], help="text the output must not contain")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no program given after --")
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sys.stdout.write(result.stdout)
    problems = []
    if result.returncode != 0:
        problems.append(f"exit status {result.returncode}")
    problems += [f"missing from the output: {text!r}" for text in args.expect if text not in result.stdout]
    problems += [f"in the output but must not be: {text!r}" for text in args.reject if text in result.stdout]
    for problem in problems:
        print(f"check_output: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
