"""The ``fastgt`` command group. Each command's module is imported only when the command
runs (or ``--help`` lists them all): reading results (``status``, ``compact``) starts in a
fraction of a second, without numba, pandas or the problem registry."""

from __future__ import annotations

import importlib
import sys
import warnings

import click

from ..errors import FastGTWarning
from .exits import EXIT_CODES, UserError

#: command -> the module of fastgt.cli that defines it (in its COMMANDS)
COMMANDS = {"topo": "core", "run": "core", "table3": "core", "report": "core",
            "warmup": "core", "theory": "theory", "grid": "sweep", "plot": "sweep",
            "status": "results", "compact": "results"}


def _one_line(err: click.UsageError) -> UserError:
    """Click's usage error (an unknown option, a value outside a choice, a missing
    argument) as every other bad input: one line, exit code 2, saying where help is,
    instead of click's usage, hint and message on several lines."""
    where = f" (see {err.ctx.command_path} --help)" if err.ctx is not None else ""
    return UserError(" ".join(err.format_message().split()) + where)


class LazyGroup(click.Group):
    def parse_args(self, ctx, args):
        try:
            return super().parse_args(ctx, args)
        except click.exceptions.NoArgsIsHelpError:
            raise  # bare ``fastgt``: the help
        except click.UsageError as err:
            raise _one_line(err) from None

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except click.exceptions.NoArgsIsHelpError:
            raise
        except click.UsageError as err:
            raise _one_line(err) from None
        except KeyboardInterrupt:  # Ctrl-C before a sweep's own handler (reading the spec,
            click.echo("interrupted", err=True)  # starting workers), or in another command:
            sys.exit(130)  # 130 as documented, not click's "Aborted!" and 1

    def list_commands(self, ctx) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx, name: str):
        if name not in COMMANDS:
            return None
        module = importlib.import_module(f"{__package__}.{COMMANDS[name]}")
        return next(c for c in module.COMMANDS if c.name == name)


@click.group(cls=LazyGroup, epilog=EXIT_CODES,
             context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.version_option(package_name="fastgt")
def main():
    """fastgt: fast simulation of Gradient Tracking and D-SGD over sparse graphs."""
    shown = warnings.showwarning

    def one_line(message, category, *args, **kwargs):
        """fastgt's own warnings as one line on stderr (not Python's file:line form)."""
        if issubclass(category, FastGTWarning):
            click.echo(f"warning: {message}", err=True)
        else:
            shown(message, category, *args, **kwargs)

    warnings.showwarning = one_line
