"""The `trainplan` command: a thin layer over the library (no formulas here).

Every command takes --json and --lang {en,zh}; bad input prints one line and exits with code 2. The
error line keeps its ASCII prefix `trainplan: error: ` in every language (scripts match it); the
message after it is translated where the catalog has it. Each command's module
is imported only when that command runs (a one-shot `trainplan estimate` loads what an estimate
needs and nothing else): COMMANDS names the module, which adds the command's parser (`add`) and
runs it (the `func` default it sets).
"""

from __future__ import annotations

import argparse
import functools
import gc
import importlib
import os
import sys

from trainplan import __version__
from trainplan.errors import TrainplanError
from trainplan.i18n import current_state, restore_language, set_language, translate

EXIT_USAGE = 2

# command -> (module that adds and runs it, one-line help). The order is the order of `--help`.
COMMANDS: dict[str, tuple[str, str]] = {
    "estimate": ("trainplan.cli.estimate", "memory per GPU, time and cost of one setup"),
    "trace": ("trainplan.cli.estimate", "exact memory of one step traced with fake tensors (CPU, needs torch)"),
    "models": ("trainplan.cli.estimate", "the model catalog"),
    "gpus": ("trainplan.cli.estimate", "the GPU catalog"),
    "datasets": ("trainplan.cli.estimate", "public datasets and the token lengths of their samples (--dataset)"),
    "plan": ("trainplan.cli.plan", "the cheapest setups that fit, ranked by cost or time, Pareto front"),
    "table": ("trainplan.cli.table", "the resource table: models x methods x precisions -> memory, GPUs"),
    "fit": ("trainplan.cli.plan", "the largest micro-batch and the longest sequence that fit one layout"),
    "record": ("trainplan.cli.ledger", "record a measured run in the ledger (with the estimate made now)"),
    "runs": ("trainplan.cli.ledger", "list recorded runs with estimate, measurement and residual"),
    "import": ("trainplan.cli.ledger", "import a case file (shared/ground_truth schema) into the ledger"),
    "calibrate": ("trainplan.cli.ledger", "fit correction terms from the ledger, validated leave-one-source-out"),
    "accuracy": ("trainplan.cli.ledger", "estimate every case of a file and compare with its measurements"),
    "export": ("trainplan.cli.export", "the configs and launch lines to run a setup: DeepSpeed, accelerate, HF, LLaMA-Factory, ..."),
    "probe": ("trainplan.cli.probe", "a short real trial on the local GPU (or CPU), measured beside the estimate"),
    "prices": ("trainplan.cli.estimate", "the prices known: your price files and the catalog (dated, with sources)"),
    "rates": ("trainplan.cli.estimate", "the exchange rates prices are converted with (dated, with sources)"),
    "serve": ("trainplan.cli.serve", "the web page and JSON API on 127.0.0.1"),
}


@functools.cache
def _terminal_columns() -> int:
    """shutil.get_terminal_size().columns without importing shutil (and its compression modules),
    which argparse's formatter does for every argument added; asked once per process."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 80
    return columns


class _Formatter(argparse.HelpFormatter):
    def __init__(self, prog: str, **kwargs) -> None:
        kwargs.setdefault("width", _terminal_columns() - 2)
        super().__init__(prog, **kwargs)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage too)
        raise TrainplanError(f"{self.prog}: {message}")


def _command_in(argv: list[str]) -> str | None:
    """The command named on the command line (the first word that is not an option), if known."""
    for word in argv:
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or with `only` (the command on the command line) just that
    command's: its module alone is imported and no other command's parser is built."""
    parser = _Parser(prog="trainplan", description="Will this LLM training run fit, how long, how much?")
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, (module, helptext) in COMMANDS.items():
        if only is None or name == only:
            importlib.import_module(module).add(sub, name, helptext)
    from trainplan.cli.flags import add_lang_flag

    for command in sub.choices.values():   # every command takes --lang (the setup flags' own included)
        add_lang_flag(command)
    return parser


def _lang_in(argv: list[str]) -> str | None:
    """The value of --lang on the command line (the last one given), read before argparse runs so
    that its own errors are shown in that language too."""
    lang = None
    for i, word in enumerate(argv):
        if word == "--":
            break
        if word == "--lang" and i + 1 < len(argv):
            lang = argv[i + 1]
        elif word.startswith("--lang="):
            lang = word[len("--lang="):]
    return lang


def _version() -> str:
    return f"trainplan {__version__}"


def _argparse_text(message: str) -> str:
    """argparse's own strings ("usage: ", "options", its errors) through trainplan's catalog. Its
    default, gettext.gettext, searches the locale folders for an `argparse` catalog on every call
    (no Python ships one): 6 calls and the `locale` import, 0.8 ms of a one-shot estimate."""
    return translate(message)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    saved, saved_text = current_state(), argparse._
    argparse._ = _argparse_text        # put back below: an in-process caller's argparse is untouched
    try:
        return _main(argv)
    finally:
        argparse._ = saved_text
        restore_language(saved)   # a caller of main() in-process keeps its own language


def _main(argv: list[str]) -> int:
    try:
        set_language(None)   # $TRAINPLAN_LANG, then the locale; a bad --lang is an error in English
        set_language(_lang_in(argv))
        args = build_parser(_command_in(argv)).parse_args(argv)
        return args.func(args)
    except TrainplanError as exc:
        message = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())   # one line, always
        print(f"trainplan: error: {translate(message)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("trainplan: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:   # output piped into `head` and the like
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception as exc:  # never a traceback for users; TRAINPLAN_DEBUG=1 shows it
        if os.environ.get("TRAINPLAN_DEBUG"):
            raise
        print(f"trainplan: internal error: {type(exc).__name__}: {exc} (set TRAINPLAN_DEBUG=1 for details)",
              file=sys.stderr)
        return 1


# Commands that hold nothing an interpreter teardown must release (no database, no torch, no child
# processes; their files are closed before they return): the `trainplan` executable ends them with
# os._exit once their output is flushed, saving the teardown of every module (~3 ms of a ~30 ms estimate).
FAST_EXIT = frozenset({"estimate", "models", "gpus", "datasets", "prices", "plan", "table", "fit"})


def run() -> None:
    """The `trainplan` executable (trainplan/__main__.py, which starts it with the cyclic garbage
    collector off): main(), then a fast exit for the FAST_EXIT commands, which keep the collector
    off; every other command turns it back on first."""
    argv = sys.argv[1:]
    fast = _command_in(argv) in FAST_EXIT
    if not fast:
        gc.enable()
    code = main(argv)
    if fast:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BrokenPipeError:
            pass
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    sys.exit(main())
