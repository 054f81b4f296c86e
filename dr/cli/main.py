"""`dr`: argument parsing, dispatch, and the mapping from errors to exit codes.

The parser is built from one registry (dr.cli.commands.COMMANDS); only the command being run
is imported (and with it only the library it uses), so is everything the error mapping names:
a cron backup pays for what it uses. Errors are of two kinds:
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
from dr.cli.commands import COMMANDS
from dr.cli.exitcodes import Exit

PYDANTIC_PLUGINS_ENV = "PYDANTIC_DISABLE_PLUGINS"


def expected_errors() -> list[tuple[tuple[type[BaseException], ...], Exit, str]]:
    """dr's own errors, most specific first (RepositoryLocked and IntegrityError are
    RepositoryErrors), with the exit code each means and the prefix of its one-line message.
    OSError is here as the operator's: a file named on the command line or in the plan that is
    missing or unreadable. Imported when an error is being sorted, not at start-up."""
    from dr.cli.arguments import UsageError
    from dr.contract.registry import PluginError
    from dr.model.plans import NotInPlan
    from dr.model.recovery import UnknownDomain
    from dr.repository.encryption import EncryptionError
    from dr.repository.locks import RepositoryLocked
    from dr.repository.repositories import IntegrityError, RepositoryError
    from dr.repository.stores.base import StoreError
    from dr.restore import RestoreUsageError
    from dr.restore.journals import JournalError

    return [
        ((UsageError, NotInPlan, UnknownDomain, RestoreUsageError), Exit.USAGE, ""),
        ((RepositoryLocked,), Exit.LOCKED, ""),
        ((IntegrityError,), Exit.INTEGRITY, "integrity: "),
        ((RepositoryError, StoreError, EncryptionError, PluginError, JournalError, OSError),
         Exit.FAILURE, ""),
    ]


# commands that stream chunks: they keep freed buffers' memory (dr/kits/buffers.py)
MOVES_DATA = frozenset({"backup", "restore", "verify", "drill", "status"})
# dr's global options that take a value (`--kubeconfig FILE`): the word after one is not the command.
VALUED = ("--kubeconfig", "--context")


def _chosen(argv: list[str]) -> str | None:
    """The command word: the first argument that is neither an option nor a global option's value."""
    values = {i + 1 for i, a in enumerate(argv) if a in VALUED}
    return next((a for i, a in enumerate(argv) if not a.startswith("-") and i not in values), None)


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors honour --json (or DR_JSON) as every other error
    does: a script piping `dr ... --json | jq` gets a JSON error, not an empty stdout."""

    def error(self, message: str):
        from dr.cli.output import Output

        self.print_usage(sys.stderr)
        Output(as_json=json_wanted(sys.argv[1:] if _argv is None else _argv)).failure(
            f"{self.prog}: {message}", Exit.USAGE, "usage")
        self.exit(Exit.USAGE)


_argv: list[str] | None = None  # the arguments being parsed, for Parser.error


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; only the command `argv` names (every one when argv is None) gets its
    arguments, which imports its module. The global options go before or after the command
    word: the top level has them with their defaults, each command has them again with none
    (SUPPRESS), so a spelling after the command only ever sets them."""
    parser = Parser(prog="dr", description="Backup and disaster recovery for AI platforms.",
                    epilog=ENVIRONMENT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="print dr's version, the repository format and Python, and exit")
    global_args(parser)
    # The demo drives dr's own entry point and the completion walks the whole parser; they get
    # them here rather than importing this module.
    parser.set_defaults(main=main, build_parser=build_parser)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = _chosen(argv) if argv is not None else None
    for entry in COMMANDS:
        command = sub.add_parser(entry.name, help=entry.help, description=entry.help)
        if argv is None or entry.name == chosen:
            _add(command, entry.load())
    if _plugins_matter(argv, chosen):
        _add_plugin_commands(sub, argv, chosen)
    return parser


def _add(command: argparse.ArgumentParser, spec) -> None:
    spec.arguments(command)
    global_args(command, default=argparse.SUPPRESS)
    command.set_defaults(handler=spec.run)


def _plugins_matter(argv: list[str] | None, chosen: str | None) -> bool:
    """Whether to read the plugin commands (dr.cli.plugin_commands): for a command word that is
    not dr's own, --help and the completion (argv None), never for a built-in's run."""
    if argv is None:
        return True
    if chosen is not None:
        return chosen not in {c.name for c in COMMANDS}
    return "-h" in argv or "--help" in argv


def _add_plugin_commands(sub, argv: list[str] | None, chosen: str | None) -> None:
    from dr.cli.plugin_commands import plugin_commands, refusing

    for plugin in plugin_commands({c.name for c in COMMANDS}):
        command = sub.add_parser(plugin.name, help=plugin.help, description=plugin.help)
        if argv is None or plugin.name == chosen:
            if plugin.spec is not None:
                _add(command, plugin.spec)
            else:
                global_args(command, default=argparse.SUPPRESS)
                command.set_defaults(handler=refusing(plugin))


def global_args(p: argparse.ArgumentParser, default=False) -> None:
    """Every command's: how it prints, and whether an expected error shows its traceback."""
    p.add_argument("--json", action="store_true", default=default,
                   help="machine-readable output on stdout, errors too (env DR_JSON)")
    p.add_argument("-q", "--quiet", action="store_true", default=default,
                   help="no progress or notes on stderr (env DR_QUIET)")
    p.add_argument("--debug", action="store_true", default=default,
                   help="print the traceback of an expected error too (one that is not a bug)")
    p.add_argument("--kubeconfig", metavar="FILE", default=None if default is False else default,
                   help="the kubeconfig of every cluster the plan's sources read, over their kubeconfig option "
                        "(then KUBECONFIG, ~/.kube/config, in-cluster)")
    p.add_argument("--context", metavar="NAME", default=None if default is False else default,
                   help="the kubeconfig context of every cluster the plan's sources read, over their context "
                        "option (then the kubeconfig's current-context)")


ENVIRONMENT_HELP = """environment (an option on the command line wins over its variable):
  DR_PLAN   the plan file, for every command that takes --plan
  DR_JSON   1/true/yes/on: as --json (0/false/no/off or empty: not)
  DR_QUIET  1/true/yes/on: as --quiet
a cluster's kubeconfig: --kubeconfig, else the source's kubeconfig option, else KUBECONFIG (a list,
merged as kubectl merges it), else ~/.kube/config, else the in-cluster service account; its
context: --context, else the source's context option, else the kubeconfig's current-context"""

_TRUE, _FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


def _flag_from(variable: str, parser: argparse.ArgumentParser) -> bool:
    """A boolean environment variable; a value that is neither is a usage error naming it."""
    value = os.environ.get(variable, "").strip().lower()
    if value not in _TRUE + _FALSE:
        parser.error(f"{variable}={os.environ[variable]!r} in the environment: expected one of "
                     f"{', '.join(_TRUE)} (on) or {', '.join(v for v in _FALSE if v)} (off)")
    return value in _TRUE


def json_wanted(argv: list[str]) -> bool:
    return "--json" in argv or os.environ.get("DR_JSON", "").strip().lower() in _TRUE


def from_environment(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """DR_JSON, DR_QUIET and DR_PLAN fill what the command line left unset (it always wins)."""
    args.json = args.json or _flag_from("DR_JSON", parser)
    args.quiet = args.quiet or _flag_from("DR_QUIET", parser)
    if "plan" in args and args.plan is None:
        args.plan = os.environ.get("DR_PLAN") or None
        if args.plan is None:
            parser.error(f"{args.command}: --plan FILE is required (or set DR_PLAN)")


class _Version(argparse.Action):
    """`dr --version`: what a bug report needs first. The layout module is plain constants; the
    exporter contract (pydantic, ~1 s on a loaded node) is left to `dr version`, so this stays
    as cheap as `dr --help`."""

    def __call__(self, parser, namespace, values, option_string=None):
        from dr.repository.layout import FORMAT_VERSION

        sys.stdout.write(f"dr {__version__} (repository format {FORMAT_VERSION}, Python "
                         f"{sys.version.split()[0]}); `dr version` adds the exporter contract and the "
                         "installed exporters\n")
        parser.exit()


def main(argv: list[str] | None = None) -> int:
    from dr.cli.output import Output
    from dr.cli.stopping import Terminated, sigterm_unwinds
    from dr.kits.collecting import collecting_less
    from dr.repository.locks import release_unreleased
    from dr.model.failure_reports import DEBUG_ENV

    argv = sys.argv[1:] if argv is None else list(argv)
    # dr's plan and option models are not for pydantic plugins to instrument; finding them
    # makes pydantic import importlib.metadata and read every installed distribution's entry
    # points at the first model, a cost every run paid (issue 15). An operator's own setting wins.
    os.environ.setdefault(PYDANTIC_PLUGINS_ENV, "__all__")
    global _argv
    _argv = argv
    parser = build_parser(argv)
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "accepts_exporter_options", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.extra = extra
    from_environment(args, parser)
    out = Output(as_json=args.json, quiet=args.quiet)
    if getattr(args, "command", None) in MOVES_DATA:
        from dr.kits.buffers import keep_freed_buffers

        keep_freed_buffers()
    if args.debug:  # the library reads it too: a failed source's traceback (dr.model.failure_reports)
        os.environ[DEBUG_ENV] = "1"
    try:
        with sigterm_unwinds(), collecting_less():
            return int(args.handler(args, out))
    except Terminated:
        release_unreleased()
        return out.failure("terminated (SIGTERM: a Job's deadline, a node drain or a deleted pod); this run's "
                           "lock is released and nothing half-written is visible; run the same command again "
                           "to continue", Exit.TERMINATED)
    except KeyboardInterrupt:
        release_unreleased()
        return out.failure("interrupted; nothing half-written is visible (a snapshot's manifest and a restore "
                           "step's journal record are written last); run the same command again to continue",
                           Exit.INTERRUPTED)
    except Exception as exc:  # noqa: BLE001  (sorted below: a plan error, dr's own errors, or a bug)
        from dr.model.plan_loading import PlanError

        if isinstance(exc, PlanError):
            if args.debug:
                out.traceback(exc)
            return _plan_error(exc, out)
        return _error(exc, out, debug=args.debug)


def _plan_error(exc, out) -> int:
    from dr.cli.output import emit, error_document
    from dr.model.redaction import redact

    out.error(f"the plan is not valid ({len(exc.problems)} problem{'s' * (len(exc.problems) != 1)}):")
    for problem in exc.problems:
        emit(sys.stderr, f"  {redact(str(problem))}\n")
    out.document(error_document(f"the plan is not valid: {len(exc.problems)} problem(s)", Exit.USAGE, "plan",
                                problems=[str(p) for p in exc.problems]))
    return Exit.USAGE


def _error(exc: Exception, out, debug: bool) -> int:
    for types, code, prefix in expected_errors():
        if isinstance(exc, types):
            if debug:
                out.traceback(exc)
            return out.failure(f"{prefix}{exc}", code)
    out.traceback(exc)
    return out.failure(f"this is a bug in dr: please report it with the traceback above (dr --version: "
                       f"{__version__})", Exit.FAILURE, "bug")


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
