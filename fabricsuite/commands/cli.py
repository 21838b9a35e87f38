"""`fabricsuite`: helper commands around the ReFrame suite.

    fabricsuite baseline --system local --last 5     # this machine's references from 5 runs
    fabricsuite history --system local               # where each variable's level shifted
    fabricsuite nightly --system local               # the nightly run: summary, JUnit, exit 0/1/2
    fabricsuite compare --system local --before-tag A --after-tag B   # after an upgrade
    fabricsuite report --system local -o report.html # one self-contained HTML page
    fabricsuite init --system mycluster              # onboard a Slurm cluster (login node)
    fabricsuite act --mode drain                     # drain the nodes the last session confirmed
    fabricsuite simulate --leaves 16 --fault link:node-5=0.75   # the map on a simulated fabric
"""

from __future__ import annotations

import argparse
import sys

from fabricsuite.commands import (
    act,
    baseline_cli,
    compare,
    history,
    init,
    nightly,
    report,
    simulate,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fabricsuite", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    # Each subcommand is one module with add_parser(sub) and run(args) -> exit status.
    commands = {m.__name__.rsplit(".", 1)[-1].removesuffix("_cli"): m
                for m in (baseline_cli, history, compare, nightly, report, init, act,
                                  simulate)}
    for module in commands.values():
        module.add_parser(sub)
    args = parser.parse_args(argv)
    return commands[args.command].run(args)


if __name__ == "__main__":
    sys.exit(main())
