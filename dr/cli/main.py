"""`dr`: argument parsing, dispatch, and the mapping from errors to exit codes.

The parser is built from one registry (dr.cli.commands.COMMANDS). Errors are of two kinds:
dr's own types, raised for what an operator can fix (a bad argument, an invalid plan, a locked
or damaged repository, a missing file), are printed as one message and mapped to the exit
code table (dr.cli.exitcodes); --debug adds their traceback. Anything else is a bug in dr: its
traceback is printed with a request to report it, and the exit code is 1.
"""

from __future__ import annotations

import argparse
import atexit
import os
import sys

from dr import __version__
from dr.cli.arguments import UsageError, output_args
from dr.cli.commands import COMMANDS
from dr.cli.exitcodes import Exit
from dr.cli.output import Output
from dr.exporters.registry import PluginError
from dr.model.failure_reports import DEBUG_ENV
from dr.model.plan_loading import PlanError
from dr.model.plans import NotInPlan
from dr.model.recovery import UnknownDomain
from dr.model.redaction import redact
from dr.repository.encryption import EncryptionError
from dr.repository.locks import RepositoryLocked
from dr.repository.repositories import IntegrityError, RepositoryError
from dr.repository.stores.base import StoreError
from dr.restore import RestoreUsageError
from dr.restore.journals import JournalError

# dr's own errors, most specific first (RepositoryLocked and IntegrityError are RepositoryErrors),
# with the exit code each means and the prefix of its one-line message. OSError is here as the
# operator's: a file named on the command line or in the plan that is missing or unreadable.
EXPECTED_ERRORS: list[tuple[tuple[type[BaseException], ...], Exit, str]] = [
    ((UsageError, NotInPlan, UnknownDomain, RestoreUsageError), Exit.USAGE, ""),
    ((RepositoryLocked,), Exit.LOCKED, ""),
    ((IntegrityError,), Exit.INTEGRITY, "integrity: "),
    ((RepositoryError, StoreError, EncryptionError, PluginError, JournalError, OSError),
     Exit.FAILURE, ""),
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dr", description="Backup and disaster recovery for AI platforms.")
    parser.add_argument("--version", action="version", version=f"dr {__version__}")
    # The demo drives dr's own entry point; it gets it here rather than importing this module,
    # which imports every command.
    parser.set_defaults(main=main)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for spec in COMMANDS:
        command = sub.add_parser(spec.name, help=spec.help, description=spec.help)
        spec.arguments(command)
        output_args(command)
        command.set_defaults(handler=spec.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "accepts_exporter_options", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    out = Output(as_json=args.json, quiet=args.quiet)
    if args.debug:  # the library reads it too: a failed source's traceback (dr.model.failure_reports)
        os.environ[DEBUG_ENV] = "1"
    try:
        return int(args.handler(args, out))
    except PlanError as exc:
        if args.debug:
            out.traceback(exc)
        return _plan_error(exc, out)
    except KeyboardInterrupt:
        out.error("interrupted; nothing half-written is visible (a snapshot's manifest and a restore "
                  "step's journal record are written last); run the same command again to continue")
        return Exit.INTERRUPTED
    except Exception as exc:  # noqa: BLE001  (sorted below: dr's own errors, or a bug)
        return _error(exc, out, debug=args.debug)


def _plan_error(exc: PlanError, out: Output) -> int:
    out.error(f"the plan is not valid ({len(exc.problems)} problem{'s' * (len(exc.problems) != 1)}):")
    for problem in exc.problems:
        print(f"  {redact(str(problem))}", file=sys.stderr)
    out.document({"error": "plan", "problems": [str(p) for p in exc.problems]})
    return Exit.USAGE


def _error(exc: Exception, out: Output, debug: bool) -> int:
    for types, code, prefix in EXPECTED_ERRORS:
        if isinstance(exc, types):
            if debug:
                out.traceback(exc)
            out.error(f"{prefix}{exc}")
            return code
    out.traceback(exc)
    out.error(f"this is a bug in dr: please report it with the traceback above (dr --version: {__version__})")
    return Exit.FAILURE


def entry() -> None:
    code = main()
    _exit_now(code)


def _exit_now(code: int) -> None:
    """Exit without tearing the interpreter down. By now every file is written and closed and
    every worker has finished; what remains is freeing the heap of boto3's and pydantic's
    models, which measured ~0.2 s of each run (a fifth of a small backup's fixed cost). The
    exit hooks still run (logging flushes, temporary files and directories are removed)."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        atexit._run_exitfuncs()
    finally:
        os._exit(code)


if __name__ == "__main__":
    entry()
