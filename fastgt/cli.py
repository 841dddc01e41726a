"""Command line: ``fastgt topo | run | warmup | ...``. Bad input exits 2 with one line."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .cli_common import (
    ALGORITHM_CHOICE,
    NOISE_CHOICE,
    PROBLEM_CHOICE,
    json_line,
    topo_options,
    topo_params,
    user_errors,
)
from .errors import FastGTError
from .topology.spectrum import METHODS
from .topology.table3 import TABLE3_NS


@click.group(context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.version_option(package_name="fastgt")
def main():
    """fastgt: fast simulation of Gradient Tracking and D-SGD over sparse graphs."""


@main.command()
@click.argument("name")
@topo_options
@click.option("--vectors", is_flag=True, help="also print the eigenvectors u (lambda2), v (lambda_n)")
@click.option("--method", type=click.Choice(METHODS), default="auto")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@user_errors
def topo(name, vectors, method, as_json, **kw):
    """Spectrum of a topology: lambda2, lambda_n, delta, p, c.

    Example: fastgt topo ring --n 300 --self-weight 0.2
    """
    from .topology import topology

    W = topology(name, **topo_params(kw))
    sp = W.spectrum(vectors=vectors, method=method)
    out = {"topology": W.name, **W.params, "n": W.n, "nnz": W.nnz, "mean_weight": W.mean_weight,
           **sp.as_dict()}
    if vectors:
        out["u"], out["v"] = sp.u.tolist(), sp.v.tolist()
    if as_json:
        click.echo(json_line(out))
        return
    for k, v in out.items():
        if k in ("u", "v"):
            v = " ".join(f"{x:.6g}" for x in v)
        elif isinstance(v, float):
            v = f"{v:.12g}"
        click.echo(f"{k:>12}  {v}")


@main.command("run")
@click.option("--algorithm", type=ALGORITHM_CHOICE, default="gt")
@click.option("--topology", "topo_name", default="ring", help="topology family (see fastgt topo)")
@topo_options
@click.option("--problem", default="quadratic",
              type=PROBLEM_CHOICE)
@click.option("--zeta", type=float, default=None, help="heterogeneity of drawn consensus/hetero problems")
@click.option("--noise", type=NOISE_CHOICE, default="gaussian")
@click.option("--sigma2", type=float, default=1.0, help="noise variance: (1/n) sum E||noise_i||^2")
@click.option("--d", type=int, default=100, help="dimension")
@click.option("--stepsize", type=float, default=0.01)
@click.option("--steps", type=int, default=20000)
@click.option("--record-every", type=int, default=100)
@click.option("--seed", type=int, default=0)
@click.option("--threads", type=int, default=None,
              help="numba threads (default: all; 1 for runs below 1e5 node-dimensions)")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="write the trace (Parquet)")
@click.option("--quiet", is_flag=True, help="no progress bar")
@user_errors
def run_cmd(algorithm, topo_name, problem, zeta, noise, sigma2, d, stepsize, steps, record_every,
            seed, threads, out, quiet, **kw):
    """Simulate one run and print its summary.

    Example: fastgt run --algorithm gt --topology ring --n 300 --steps 20000 --out trace.parquet
    """
    from . import problem as make_problem
    from . import run, topology

    W = topology(topo_name, **topo_params(kw))
    prob = make_problem(problem, **({"zeta": zeta} if zeta is not None else {}))
    bar = progress = None
    if not quiet:
        from tqdm import tqdm

        bar = tqdm(total=steps, unit="step", disable=None, file=sys.stderr)

        def progress(t):
            bar.update(t - bar.n)

    res = run(algorithm=algorithm, topology=W, problem=prob, noise=noise, sigma2=sigma2, d=d,
              stepsize=stepsize, steps=steps, record_every=record_every, seed=seed,
              threads=threads, progress=progress)
    if bar is not None:
        bar.close()
    if out:
        res.trace.to_parquet(out, index=False)
    for k, v in res.summary.items():
        click.echo(f"{k:>18}  {v:.6g}" if isinstance(v, float) else f"{k:>18}  {v}")
    if out:
        click.echo(f"trace written to {out}")


@main.command("table3")
@click.option("--ns", default=",".join(map(str, TABLE3_NS)),
              help="comma-separated node counts (perfect squares: the torus is square)")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output (records)")
@user_errors
def table3_cmd(ns, as_json):
    """The paper's Table 3 (1/p and c of ring, 2-d torus, complete graph), computed exactly.

    Example: fastgt table3 --ns 64,1024,16384
    """
    from .topology.table3 import table3, to_markdown

    try:
        sizes = [int(x) for x in ns.split(",")]
    except ValueError:
        raise FastGTError(f"ns={ns!r} is invalid: allowed comma-separated integers") from None
    df = table3(sizes)
    click.echo(df.to_json(orient="records", double_precision=15) if as_json else to_markdown(df))


@main.command("report")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--out", default=None, help="where figures and slopes.md go [default: DIRECTORY]")
@click.option("--metric", default="consensus",
              type=click.Choice(["consensus", "loss_nodes", "loss_avg", "tracking"]))
@click.option("--include-transient", is_flag=True,
              help="fit cells whose plateau was not stationary too (drawn hollow either way)")
@user_errors
def report_cmd(directory, out, metric, include_transient):
    """The paper's figures and slope table from sweeps under DIRECTORY.

    Example: scripts/reproduce_paper.sh --quick --out results/quick (runs the sweeps and this)
    """
    from .report import report

    _, files = report(directory, out, metric, include_transient=include_transient)
    click.echo((Path(out or directory) / "slopes.md").read_text())
    click.echo(f"wrote {len(files)} files to {out or directory}")


@main.command()
def warmup():
    """Compile (or load from the cache) every kernel now, once per machine."""
    from .runtime import warmup as do_warmup

    do_warmup(verbose=True)



def _add_commands():
    from .cli_sweep import COMMANDS as sweep
    from .cli_theory import COMMANDS as theory

    for cmd in (*sweep, *theory):
        main.add_command(cmd)


_add_commands()
