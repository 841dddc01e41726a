"""The ``fastgt`` command group. Each command's module is imported only when the command
runs (or ``--help`` lists them all): reading results (``status``, ``compact``) starts in a
fraction of a second, without numba, pandas or the problem registry."""

from __future__ import annotations

import contextlib
import importlib
import sys
import warnings

import click

from ..errors import FastGTError, FastGTWarning
from .exits import EXIT_CODES, UserError

#: command -> the module of fastgt.cli that defines it (in its COMMANDS)
COMMANDS = {"topo": "core", "run": "core", "table3": "core", "report": "core",
            "warmup": "core", "theory": "theory", "grid": "sweep", "plot": "sweep",
            "status": "results", "compact": "results"}


@contextlib.contextmanager
def _one_line_usage_errors():
    """Click's usage errors (an unknown option, a value outside a choice, a missing
    argument) as every other bad input: one line, exit code 2, saying where help is,
    instead of click's usage, hint and message on several lines. A bare ``fastgt`` still
    gets the help."""
    try:
        yield
    except click.exceptions.NoArgsIsHelpError:
        raise
    except click.UsageError as err:
        where = f" (see {err.ctx.command_path} --help)" if err.ctx is not None else ""
        raise UserError(" ".join(err.format_message().split()) + where) from None


def _one_line_warnings() -> None:
    """fastgt's own warnings as one line on stderr (not Python's file:line form); once per
    process (a second invoke, as tests make, finds it installed)."""
    shown = warnings.showwarning
    if getattr(shown, "fastgt_one_line", False):
        return

    def one_line(message, category, *args, **kwargs):
        if issubclass(category, FastGTWarning):
            click.echo(f"warning: {message}", err=True)
        else:
            shown(message, category, *args, **kwargs)

    one_line.fastgt_one_line = True
    warnings.showwarning = one_line


class LazyGroup(click.Group):
    def parse_args(self, ctx, args):
        with _one_line_usage_errors():
            return super().parse_args(ctx, args)

    def invoke(self, ctx):
        _one_line_warnings()  # before the command's module loads: its imports may warn
        try:
            with _one_line_usage_errors():
                return super().invoke(ctx)
        except KeyboardInterrupt:  # Ctrl-C before a sweep's own handler (reading the spec,
            click.echo("interrupted", err=True)  # starting workers), or in another command:
            sys.exit(130)  # 130 as documented, not click's "Aborted!" and 1

    def list_commands(self, ctx) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx, name: str):
        if name not in COMMANDS:
            return None
        try:
            module = importlib.import_module(f"{__package__}.{COMMANDS[name]}")
        except FastGTError as err:  # the environment's (kernels: FASTGT_VECTOR_BITS)
            raise UserError(str(err)) from None
        return next(c for c in module.COMMANDS if c.name == name)


@click.group(cls=LazyGroup, epilog=EXIT_CODES,
             context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.version_option(package_name="fastgt")
def main():
    """fastgt: fast simulation of decentralized optimization (GT, ATC-GT, D-SGD, D², EXTRA, a
    centralized baseline) over sparse and time-varying graphs, with exact theory."""
