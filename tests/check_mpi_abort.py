#!/usr/bin/env python3
"""Runs an MPI job that must end, not hang, and checks its exit status and stderr.

    check_mpi_abort.py [--fail] [--expect TEXT ...] [--timeout SECONDS] -- mpiexec args...

Passes when the job ends within the timeout, its exit status is non-zero with --fail (zero
without), and its standard error contains every --expect text. The job runs in its own
session and is killed with SIGKILL on timeout: a launcher whose ranks hang may ignore SIGTERM.
"""
import argparse
import os
import signal
import subprocess
import sys


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fail", action="store_true", help="the job must exit with a non-zero status")
    parser.add_argument("--expect", action="append", default=[], help="text stderr must contain")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no program given after --")
    job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    try:
        out, err = job.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        out, err = job.communicate()
        sys.stdout.write(out + err)
        print(f"check_mpi_abort: the job did not end within {args.timeout} s (a hang)", file=sys.stderr)
        return 1
    sys.stdout.write("---- stdout ----\n" + out + "---- stderr ----\n" + err)
    problems = []
    if args.fail and job.returncode == 0:
        problems.append("exit status 0, but the job must fail")
    if not args.fail and job.returncode != 0:
        problems.append(f"exit status {job.returncode}, but the job must succeed")
    problems += [f"missing from stderr: {text!r}" for text in args.expect if text not in err]
    for problem in problems:
        print(f"check_mpi_abort: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
