"""Commands ``fastgt topo | run | table3 | report | warmup`` (the group: group.py). Bad input
exits 2 with one line."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import click

from ..config import DTYPES
from ..errors import FastGTError, WriteFailed
from ..metrics import METRICS, THEORY_METRICS, TRACE_AXES
from ..outputs import check_dir, check_file, write_file
from ..paper.table3 import TABLE3_NS
from ..problems import PROBLEM_RENAME
from ..topology.mixing import flat_names
from ..topology.spectrum import METHODS
from .common import (
    TOPOLOGY_CHOICE,
    flat_params,
    json_line,
    param_option,
    scope_options,
    topo_options,
    topo_params,
)
from .exits import ResultError, user_errors

#: the formats of ``fastgt run --out``, by suffix (a name without one: Parquet)
TRACE_FORMATS = ("parquet", "pq", "csv")


#: graphs without a closed form beyond this many nodes: `fastgt topo` says that their
#: spectrum may take a while (a user trial: 179 s without a word at n = 15000)
LANCZOS_NOTE = 5000


@click.command("topo", help=f"""Spectrum of topology NAME: lambda2, lambda_n, delta, p, c, p_eff (the
per-step contraction over a period of a time-varying topology; p for a static one).

NAME is one of {", ".join(TOPOLOGY_CHOICE.choices)}.

Example: fastgt topo ring --n 300 --self-weight 0.2
""")
@click.argument("name", type=TOPOLOGY_CHOICE, metavar="NAME")
@topo_options
@click.option("--vectors", is_flag=True, help="also print the eigenvectors u (lambda2), v (lambda_n)")
@click.option("--method", type=click.Choice(METHODS), default="auto",
              help="closed: closed forms (circulants, hypercube); dense: eigh; sparse: Lanczos; "
                   "auto: the first that applies")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@user_errors
def topo(name, vectors, method, as_json, **kw):
    from ..flat import flat_topology

    W = flat_topology(name, topo_params(kw))
    if W.static and W.structure is None and W.n > LANCZOS_NOTE and method != "dense":
        click.echo(f"fastgt: the spectrum of this {W.name} graph of n={W.n} by Lanczos: minutes "
                   "at n of 10^4 and more (Ctrl-C stops it)...", err=True)
    sp = W.spectrum(vectors=vectors, method=method)
    shape = ({"nnz": W.nnz, "mean_weight": W.mean_weight} if W.static else
             {"period": "drawn every step" if W.drawn else len(W.period)})
    out = {"topology": W.name, **flat_names(W.params), "n": W.n, **shape, **sp.as_dict()}
    if vectors:
        out["u"], out["v"] = sp.u.tolist(), sp.v.tolist()
    if as_json:
        click.echo(json_line(out))
        return
    for k, v in out.items():
        if k in ("u", "v"):
            v = " ".join(f"{x:.6g}" for x in v)
        elif isinstance(v, float):
            v = "n/a" if math.isnan(v) else f"{v:.12g}"
        click.echo(f"{k:>12}  {v}")
    if any(math.isnan(v) for v in out.values() if isinstance(v, float)):
        click.echo("n/a: a value of each matrix, defined where every matrix of the period is "
                   "symmetric with the same value; p_eff: the period's contraction "
                   "(docs/topologies.md)")


@click.command("run")
@param_option("topology", default="ring")
@topo_options
@scope_options("run", skip=("topology",))
@scope_options("problem")
@click.option("--threads", type=int, default=None,
              help="numba threads (default: all; 1 for runs below 1e5 node-dimensions)")
@click.option("--out", "-o", default=None,
              help="write the trace to FILE (its directory must exist): Parquet, with the "
                   "run's config and summary in its metadata (key fastgt), or CSV for a "
                   "name ending in .csv; - writes CSV to standard output (the summary then "
                   "goes to standard error)")
@click.option("--quiet", is_flag=True, help="no progress bar")
@user_errors
def run_cmd(threads, out, quiet, **kw):
    """Simulate one run and print its summary (exit code 3 if it diverged).

    Example: fastgt run --algorithm gt --topology ring --n 300 --steps 20000 --out trace.parquet
    """
    from click.core import ParameterSource

    from ..engine import built_problem
    from ..flat import build
    from ..runner import check_state_fits, run

    if out and out != "-":
        check_file("--out", out, TRACE_FORMATS, bare=True)
    params = flat_params(kw, "topology") | flat_params(kw, "problem")
    if click.get_current_context().get_parameter_source("d") is ParameterSource.DEFAULT:
        kw["d"] = None  # a data file's own, else the default
    check_state_fits(params, kw["d"], kw["dtype"])  # before the graph is built
    W, prob = build(kw.pop("topology"), kw.pop("problem"), params)
    built_problem(prob, W.n, kw["d"])  # a --d beside a data file: refused before the bar
    done = [0]  # the steps run, for Ctrl-C's message
    bar = None
    if not quiet:
        from tqdm import tqdm

        bar = tqdm(total=kw["steps"], unit="step", disable=None, file=sys.stderr)

    def progress(t):
        done[0] = t
        if bar is not None:
            bar.update(t - bar.n)

    try:
        res = run(topology=W, problem=prob, threads=threads, progress=progress, **kw)
    except KeyboardInterrupt:
        if bar is not None:  # closed first: the message on a line of its own
            bar.close()
        click.echo(f"interrupted at step {done[0]} of {kw['steps']}: nothing written",
                   err=True)
        sys.exit(130)
    finally:
        if bar is not None:
            bar.close()
    closed = None  # | head left (the trace's or the summary's reader): a divergence is
    try:  # still said, exit 3
        if out:  # before the summary: a pipe closed early (| head) must not lose the file
            _write_trace(res, out)
    except BrokenPipeError as err:  # --out -: standard output
        closed = err
        _discard_stdout()
    finally:
        try:
            _print_summary(res, W, err=out == "-")
            if out and out != "-":
                click.echo(f"trace written to {out}")
        except BrokenPipeError as err:
            closed = err
            _discard_stdout()
    s = res.summary
    if closed is not None and s["status"] != "diverged":
        raise closed  # click's exit 1 for a closed pipe
    if s["status"] == "diverged":
        raise ResultError(f"the run diverged at step {s['diverged_step']}: "
                          f"{s['diverged_reason']}"
                          f"{_stable_hint(W, kw['algorithm'], prob, kw['local_steps'] or 1, kw['topology_y'])}")


def _discard_stdout() -> None:
    """Standard output's reader has gone: what is still buffered, or written later, goes
    nowhere (not a second BrokenPipeError at exit)."""
    import os

    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (tests): nothing to flush
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _problem_shown(config: dict) -> str:
    """The problem with the scalar parameters given to it (a run's config holds them as
    problem_<name>), by their flat names: ``logistic(split='dirichlet', batch_size=8)``."""
    given = [(k.removeprefix("problem_"), v) for k, v in config.items()
             if k.startswith("problem_") and k != "problem_info"]
    shown = ", ".join(f"{PROBLEM_RENAME.get(k, k)}={v!r}" for k, v in given)
    return f"{config['problem']}({shown})" if given else config["problem"]


def _print_summary(res, W, err: bool = False) -> None:
    """What ran (algorithm, topology ``W``, problem, noise, stepsize, seed, the relaxations
    and float32 where set, d: a data file's own), then every entry of the run's summary but
    the empty ones and the metrics that do not apply (no value at step 0: tracking without
    a tracker, accuracy without classes); a diverged run's plateaus are missing, said so;
    else a note says what the plateaus are. ``err``: to standard error (standard output
    holds the trace)."""
    summary, config = res.summary, res.config
    first = res.records[0]  # step 0's record (not res.trace: no pandas for a summary)
    absent = {m for q, m in enumerate(METRICS, start=1) if first[q] != first[q]}
    ran = {"algorithm": config["algorithm"], "topology": W.describe(),
           "problem": _problem_shown(config), "noise": config["noise"],
           "stepsize": config["stepsize"], "seed": config["seed"]}
    ran |= {k: config[k] for k in ("local_steps", "topology_y", "dtype")
            if config.get(k) not in (None, 1, "float64")}
    for k, v in (ran | {"d": config["d"]}).items():
        click.echo(f"{k:>18}  {v:.6g}" if isinstance(v, float) else f"{k:>18}  {v}", err=err)
    for k, v in summary.items():
        if v is None or k == "batch" or k.removeprefix("final_") in absent:
            continue  # batch: cells advanced together, one here
        if k in METRICS and summary["status"] == "diverged":
            v = "missing (the run diverged)"
        if v == "":  # rounding_limited of a float32 run: checked, none
            v = "none"
        click.echo(f"{k:>18}  {v:.6g}" if isinstance(v, float) else f"{k:>18}  {v}",
                   err=err)
    if summary["status"] != "diverged":
        from ..theory import covers

        theory = " (`fastgt theory`: the exact floors, and the steps a plateau needs)" \
            if covers(config["algorithm"], config["problem"]) else ""
        click.echo("note: the metrics without final_ are plateaus, the mean of the records "
                   f"in the last half of the run{theory}", err=err)


def _write_trace(res, out: str) -> None:
    """Write the trace (CSV for a name ending in .csv or for -, standard output; else
    Parquet); if that fails, save it to a temporary file and say where."""
    import os
    import tempfile

    import pyarrow as pa

    table = pa.Table.from_pandas(res.trace, preserve_index=False)
    csv = out == "-" or out.lower().endswith(".csv")

    def write(name):  # Parquet: the run's config and summary in its metadata, what ran
        if csv:
            import pyarrow.csv

            pyarrow.csv.write_csv(table, name)
            return
        import json

        import pyarrow.parquet as pq

        def strict(v):  # JSON has no NaN (final_accuracy of a problem without classes)
            if isinstance(v, dict):
                return {k: strict(x) for k, x in v.items()}
            if isinstance(v, list | tuple):
                return [strict(x) for x in v]
            return None if isinstance(v, float) and not math.isfinite(v) else v

        about = json.dumps(strict({"config": res.config, "summary": res.summary}),
                           default=str, allow_nan=False)
        pq.write_table(table.replace_schema_metadata(
            {**(table.schema.metadata or {}), b"fastgt": about.encode()}), name)

    if out == "-":
        write(sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    try:
        write_file("--out", out, write)
    except WriteFailed as err:
        fd, spare = tempfile.mkstemp(prefix="fastgt-trace-", suffix=".csv" if csv else ".parquet")
        os.close(fd)
        try:
            write(spare)
        except OSError as again:
            os.remove(spare)
            raise WriteFailed(f"{err}; saving it to {spare!r} failed too "
                              f"({again.strerror or again}): "
                              "the trace is lost, the summary above is all there is") from None
        raise WriteFailed(f"{err}; the trace was saved to {spare!r} instead") from None


def _stable_hint(W, algorithm: str, prob, local_steps: int, topology_y) -> str:
    """'; the largest stable stepsize is ...' where the exact theory knows it (for these
    local steps and topology_y); why, for a run outside the algorithm's stability condition
    (allow_unstable), where a smaller stepsize may not help."""
    from ..algorithms import ALGORITHMS
    from ..theory import where_stable

    check = ALGORITHMS[algorithm].check
    outside = check(W, local_steps) if check else None
    why = f"; it ran outside its stability condition (allow_unstable): {outside}" \
        if outside else ""
    try:
        return f"{why}; exact theory: {where_stable(W, algorithm, prob, local_steps, topology_y)}"
    except FastGTError:  # the theory does not cover the problem (or the topology)
        return why or "; try a smaller --stepsize"


@click.command("table3")
@click.option("--ns", default=",".join(map(str, TABLE3_NS)),
              help="comma-separated node counts (perfect squares: the torus is square)")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output (records)")
@user_errors
def table3_cmd(ns, as_json):
    """The paper's Table 3 (1/p and c of ring, 2-d torus, complete graph), computed exactly.

    Example: fastgt table3 --ns 64,1024,16384
    """
    from ..paper.table3 import table3, to_markdown

    try:
        sizes = [int(x) for x in ns.split(",")]
    except ValueError:
        raise FastGTError(f"ns={ns!r} is invalid: allowed comma-separated integers") from None
    df = table3(sizes)
    click.echo(df.to_json(orient="records", double_precision=15) if as_json else to_markdown(df))


@click.command("report")
@click.argument("directory", metavar="DIR")
@click.option("--out", "-o", default=None,
              help="directory for the figures and slopes.md (created if missing) [default: DIR]")
@click.option("--metric", default="consensus",
              type=click.Choice(THEORY_METRICS),
              help="the metric whose plateaus are plotted and fitted")
@click.option("--include-transient", is_flag=True,
              help="fit cells whose plateau was not stationary too (drawn hollow either way)")
@click.option("--curves", type=click.Choice(TRACE_AXES), default=None,
              help="also draw each figure's traces of --metric against this axis: steps, "
                   "communication rounds or gradient evaluations so far, per node")
@user_errors
def report_cmd(directory, out, metric, include_transient, curves):
    """The paper's figures and slope table of the sweep DIR, or of each sweep under DIR
    (reported apart: file names start with the sweep's name).

    Example: scripts/reproduce_paper.sh --quick --out results/quick (runs the sweeps and this)
    """
    from ..paper.report import report, sweep_dirs

    sweep_dirs(directory)  # DIR judged first: a file given as DIR is not "a bad --out"
    target = out or directory
    check_dir("--out", target)
    try:
        _, files = report(directory, out, metric, include_transient=include_transient,
                          curves=curves)
    except OSError as err:
        raise WriteFailed(f"--out {target!r} could not be written: {err.strerror or err}") from None
    click.echo((Path(target) / "slopes.md").read_text())
    click.echo(f"wrote {len(files)} files to {target}")


@click.command("warmup")
@click.option("--dtype", type=click.Choice(DTYPES), multiple=True,
              help="state types to compile for (repeatable; default float64 only)")
@user_errors
def warmup(dtype):
    """Compile (or load from the cache) every kernel now, once per machine (each problem
    family: the quadratics, the problems with data)."""
    from ..runtime import cache_dir
    from ..warmup import families
    from ..warmup import warmup as do_warmup

    for dt in dtype or ("float64",):
        for kernels, names in families():
            took = do_warmup(kernels=kernels, dtype=dt)
            click.echo(f"fastgt kernels of {', '.join(names)} ({dt}) ready in {took:.1f} s "
                       f"(cache: {cache_dir()})")


COMMANDS = [topo, run_cmd, table3_cmd, report_cmd, warmup]
