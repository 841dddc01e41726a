"""Sweep commands: ``fastgt grid | plot`` (listed in fastgt.cli.group; status and compact,
which only read, are in results.py)."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import sys
import threading

import click

from ..errors import FastGTError, WriteFailed, check_choice
from ..outputs import check_dir, check_file, write_file
from ..sweep.backends import DASK_HINT, EXECUTORS
from ..sweep.tasks import FLUSH_SECONDS, MAX_BATCH
from .exits import FIGURE_FORMATS, ResultError, user_errors


@click.command("grid")
@click.argument("spec", type=click.Path(dir_okay=False))
@click.option("--out", "-o", required=True,
              help="sweep directory (created with its parents if missing), or a URI "
                   "(s3://..., memory://...)")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="fix a parameter in every cell (overrides the file), e.g. --set stepsize=0.005")
@click.option("--param", "params", multiple=True, metavar="KEY=V1,V2",
              help="make a parameter a grid axis of every [[grid]] table, e.g. --param alpha=0.1,0.2")
@click.option("--workers", type=int, default=None,
              help="worker processes (default: the cores this process may use)")
@click.option("--threads-per-worker", type=int, default=1, help="numba threads in each worker")
@click.option("--executor", type=click.Choice(EXECUTORS), default="local",
              help="local: worker processes on this machine; dask: a Dask cluster "
                   f"(see --scheduler; {DASK_HINT})")
@click.option("--scheduler", default=None,
              help="dask: 'local' (a LocalCluster on 127.0.0.1) or tcp://HOST:PORT  [default: local]")
@click.option("--max-batch", type=int, default=MAX_BATCH,
              help="most cells a worker advances together in one compiled loop (cells that "
                   "differ only in seed, stepsize, sigma2, alpha or self_weight; fewer when "
                   "they would take more than a few seconds); 1: one by one")
@click.option("--flush-seconds", type=float, default=FLUSH_SECONDS, show_default=True,
              help="finished cells are written (one file pair) at least this often: a kill "
                   "of the whole sweep loses at most this much finished work")
@click.option("--force", is_flag=True, help="recompute cells that are already finished")
@click.option("--retry-failed", is_flag=True, help="recompute cells recorded as failed")
@click.option("--dry-run", is_flag=True, help="list the cells and what is done; run nothing")
@click.option("--quiet", is_flag=True, help="no progress bar")
@user_errors
def grid(spec, out, sets, params, workers, threads_per_worker, executor, scheduler, max_batch,
         flush_seconds, force, retry_failed, dry_run, quiet):
    """Run every cell of the grid SPEC (TOML) and store the results in the directory --out.

    Finished cells are skipped on a rerun; failed or diverged cells are recorded and the
    sweep goes on. Exit code: 0 if every cell is ok, 3 if some failed or diverged, or were
    lost to a worker that died (after the others finished; a rerun computes the lost
    ones), 2 for a bad spec or --out, 1 if results could not be written,
    130 on Ctrl-C and 143 on SIGTERM (both stop the workers and keep every finished cell).

    Example: fastgt grid scripts/demo.toml --out results/demo --workers 2
    """
    from ..derived import cache_in
    from ..sweep.backends import check_options
    from ..sweep.executors import run_sweep
    from ..sweep.grid import load_spec
    from ..sweep.storage import Store

    try:
        check_options(executor, scheduler, workers, threads_per_worker, max_batch, flush_seconds)
    except FastGTError as err:
        raise _in_option_terms(err) from None
    check_dir("--out", out, probe=not dry_run)  # a dry run writes nothing
    held: list = []  # a spectrum the checks of the cells derive (d2's lambda_n of a graph
    # without a closed form: minutes at n = 5 10^5), kept in DIR as the sweep starts, where
    # the workers find it (a dry run drops it)
    with cache_in(Store(out, create=False).url(""), held=held):
        gs = load_spec(spec, sets, params)
        cells = gs.cells()
    if dry_run:
        _dry_run(cells, out)
        return
    _theory_notes(cells)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = {s: signal.signal(s, _stopped) for s in _STOPS  # an ignored one stays so
                if main_thread and signal.getsignal(s) is not signal.SIG_IGN}
    try:
        report = run_sweep(cells, out, executor=executor, workers=workers,
                           threads=threads_per_worker, scheduler=scheduler, force=force,
                           retry_failed=retry_failed, spec_text=gs.to_toml(), progress=not quiet,
                           max_batch=max_batch, flush_seconds=flush_seconds, held=held)
    except FastGTError as err:  # a backend's: an unreachable scheduler, no dask
        raise _in_option_terms(err) from None
    except KeyboardInterrupt as stop:
        click.echo(_interrupted(getattr(stop, "sweep_report", None)), err=True)
        sys.exit(143 if isinstance(stop, Terminated) else 130)
    except OSError as err:
        raise WriteFailed(f"--out {out!r} could not be written: {err.strerror or err}; the "
                          "cells written before are kept, rerun the command to complete") from None
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    click.echo("\n".join([report.line(), *report.notes(), *report.failures()]))
    if report.lost:
        raise ResultError(f"{report.lost} cells were lost ({report.lost_reason}; e.g. cell "
                          f"{', '.join(report.lost_ids)}): rerun the command to compute them")
    bad = report.failed + report.status["diverged"]
    if bad:
        parts = [f"{n} {'cell' if n == 1 else 'cells'} {what}" for n, what in
                 ((report.failed, "failed"), (report.status["diverged"], "diverged")) if n]
        raise ResultError(f"{' and '.join(parts)}: see `fastgt status {shlex.quote(out)} "
                          "--failed`")


def _interrupted(report) -> str:
    """What an interrupted sweep kept: the cells it finished (written as it stopped)."""
    done = sum(report.status.values()) if report is not None else 0
    if not done:
        return "interrupted before any cell finished here; rerun the command to complete"
    return (f"interrupted: the {done} cells finished here are kept; rerun the command to "
            "complete")


def _theory_notes(cells) -> None:
    """Say once, before the work, why some cells will have empty theory_* columns."""
    from ..theory import TIME_VARYING
    from ..topology import VARYING

    varying = sorted({c.params["topology"] for c in cells if c.params["topology"] in VARYING})
    if varying:
        click.echo(f"note: theory_* columns stay empty for {', '.join(varying)}: {TIME_VARYING}",
                   err=True)


#: run_sweep's keyword arguments that are options of `fastgt grid`, as its errors name them
_OPTIONS = re.compile(r"(?<![\w'-])(executor|scheduler|workers|threads_per_worker|max_batch|"
                      r"flush_seconds)(=| is| needs)")


def _in_option_terms(err: FastGTError) -> FastGTError:
    """``err`` with the options named as the shell gives them (--max-batch 0 is invalid,
    not max_batch=0), outside quoted values (a scheduler's address may hold any text)."""
    parts = re.split(r"('[^']*')", str(err))
    return FastGTError("".join(part if k % 2 else _OPTIONS.sub(
        lambda m: "--" + m[1].replace("_", "-") + m[2].replace("=", " "), part)
        for k, part in enumerate(parts)))


class Terminated(KeyboardInterrupt):
    """SIGTERM (e.g. the end of a batch job) stops a sweep like Ctrl-C does."""


#: the signals that stop a sweep, and the exception each raises
_STOPS = {signal.SIGINT: KeyboardInterrupt, signal.SIGTERM: Terminated}


def _stopped(signum, frame):
    from ..sweep.signals import stop

    stop(_STOPS[signum]())


def _dry_run(cells, out) -> None:
    from ..params import from_file, inapplicable
    from ..sweep.storage import Store, exists

    done = Store(out, create=False).ids() if exists(out) else set()
    for c in cells:
        # defaults the cell does not use: d too where its data file fixes it
        ignored = inapplicable(c.params) + ["d"] * from_file(c.params)
        params = " ".join(f"{k}={v}" for k, v in c.params.items() if k not in ignored)
        click.echo(f"{c.id}  {'done' if c.id in done else 'todo'}  {params}")
    click.echo(f"{len(cells)} cells, {sum(c.id in done for c in cells)} done")


@click.command("plot")
@click.argument("directory", metavar="DIR")
@click.option("--x", "x", default=None,
              help="parameter on the x axis (summary plots); with --curves: step [default], "
                   "comm_rounds or grad_evals")
@click.option("--y", "y", default="loss_nodes", help="metric on the y axis")
@click.option("--hue", default=None, help="parameter giving the colour")
@click.option("--where", multiple=True, metavar="KEY=VALUE",
              help="keep only matching cells (KEY=V1,V2: any of the values); repeatable")
@click.option("--curves", is_flag=True, help="plot traces (metric vs step) instead of summaries")
@click.option("--logx/--linx", default=None, help="log x axis [default: log if x > 0 spans 10x]")
@click.option("--logy/--liny", default=None,
              help="log y axis [default: log, but linear for accuracy]")
@click.option("--out", "-o", default="plot.png",
              help="figure FILE, its format by suffix (" + ", ".join(f".{f}" for f in FIGURE_FORMATS)
                   + "); its directory must exist")
@user_errors
def plot(directory, x, y, hue, where, curves, logx, logy, out):
    """Figure of the sweep DIR: mean over seeds (with 95% CI) of --y against --x, one line
    per --hue value; or, with --curves, every trace of --y against the step (or --x
    comm_rounds, grad_evals: the costs so far, per node).

    Example: fastgt plot results/demo --x alpha --y loss_nodes --hue algorithm -o fig1.png
    """
    from ..metrics import TRACE_AXES
    from ..sweep.storage import open_sweep

    check_file("--out", out, FIGURE_FORMATS)
    store = open_sweep(directory)
    if not curves and x is None:
        raise FastGTError("--x is required: allowed a parameter name (or use --curves)")
    if curves and x is not None:
        check_choice("x", x, TRACE_AXES)  # before reading the traces
    from ..analysis import plots  # matplotlib: after the checks that need none (1-2 s)

    shown = directory + (f" where {', '.join(where)}" if where else "")  # in the title
    if curves:
        fig = plots.curves(_read(store, "traces", where), y=y, hue=hue,
                           logx=bool(logx), logy=logy, sweep=shown, x=x or "step")
        failed = int((_read(store, "cells", where, ["status"])["status"] == "failed").sum())
        if failed:  # a failed cell has no trace
            click.echo(f"{failed} {'cell' if failed == 1 else 'cells'} failed, without a "
                       f"trace (fastgt status {directory} --failed lists them)")
    else:
        cells = _read(store, "cells", where)
        fig = plots.summary(cells, x=x, y=y, hue=hue, logx=logx, logy=logy, sweep=shown)
        drawn = cells[(cells["status"] == "ok") & cells[x].notna()]  # as summary() draws
        mixed = plots.averaged(drawn, [x] + ([hue] if hue else []))
        if mixed:  # the title says so too; easy to miss (e.g. GT and D-SGD in one point)
            click.echo(f"each point averages cells of different {', '.join(mixed)} (--hue "
                       "or --where tells them apart)")
        bad = int(((cells["status"] != "ok") & cells[x].notna()).sum())
        if bad:  # the summary draws ok cells only (and says so of cells without x)
            click.echo(f"{bad} {'cell' if bad == 1 else 'cells'} diverged or failed, left "
                       f"out (fastgt status {directory} --failed lists them)")
    fmt = os.path.splitext(out)[1].lower().lstrip(".")
    write_file("--out", out, lambda name: fig.savefig(name, format=fmt, bbox_inches="tight"))
    click.echo(f"figure written to {out}")


def _read(store, sub: str, where, columns=None):
    """DIR/<sub>'s rows (``columns``: those only) matching every KEY=VALUE (or KEY=V1,V2:
    any of them) of --where, pushed down to the files."""
    from ..errors import bad
    from ..params import PARAMS
    from ..sweep.grid import literal, split_values

    conds: dict = {}
    for cond in where:
        key, eq, val = cond.partition("=")
        if not eq:
            raise bad("--where", cond, "KEY=VALUE or KEY=V1,V2")
        values = [literal(v) for v in split_values(val)]
        # a parameter's values as its cells hold them (a TOML table: its sorted JSON text)
        values = {PARAMS[key].validate(key, v) if key in PARAMS
                  else json.dumps(v) if isinstance(v, dict | list) else v for v in values}
        conds[key] = conds[key] & values if key in conds else values  # repeated: both hold
        if not conds[key]:
            raise FastGTError(f"no results to plot (where {' '.join(where)})")
    conds = {k: sorted(v, key=str) for k, v in conds.items()}
    df = store.read(sub, columns, where=conds or None)
    if df.empty:
        raise FastGTError("no results to plot" + (f" (where {' '.join(where)})" if where else
                                                   f": {store.root} holds no finished cell"))
    return df


COMMANDS = [grid, plot]
