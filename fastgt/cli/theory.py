"""``fastgt theory``: exact stationary metrics, rate and largest stable stepsize (fastgt.theory)."""

from __future__ import annotations

import click

from ..theory import ALGORITHMS as THEORY_ALGORITHMS
from ..theory import NOISES
from .common import json_line, param_option, topo_options, topo_params
from .exits import ResultError, user_errors


@click.command("theory")
@param_option("algorithm", type=click.Choice(THEORY_ALGORITHMS))
@param_option("topology", default="ring")
@topo_options
@click.option("--problem", type=click.Choice(["quadratic", "consensus"]), default="quadratic",
              help="quadratic: Setup A/B (f_i = ||x||^2); consensus: f_i = 1/2 ||x - mu_i||^2")
@param_option("noise", type=click.Choice(NOISES),
              help="gaussian: Setup A; structured: Setup B; none: exact gradients (the "
                   "theory's noises)")
@param_option("sigma2")
@param_option("d", help="dimension (matters for structured noise)")
@param_option("stepsize")
@param_option("local_steps", default=1)
@param_option("topology_y")
@param_option("record_every", default=None,
              help="with local steps: average the metrics over the phases that records every "
                   "this many steps fall on (default: all phases)")
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@user_errors
def theory_cmd(algorithm, topology, problem, noise, sigma2, d, stepsize, local_steps,
               topology_y, record_every, as_json, **kw):
    """Exact stationary metrics (t -> infinity), linear rate and largest stable stepsize.

    Quadratic problems only: no simulation, O(n) once the eigenvalues are known. Exit code 3
    when the stepsize is unstable (the iterates diverge). max_stepsize: where the stable
    stepsizes that begin at 0 end (0 if small ones are unstable); stable_stepsizes: all of
    them, as intervals; time_constant: 1 / (1 - rate), the steps per e-fold of the slowest
    mode (a run's plateau needs several of them).
    Example: fastgt theory --topology ring --n 300 --self-weight 0.1 --stepsize 0.01
    """
    from ..engine import checked_topology_y
    from ..errors import check_float
    from ..flat import flat_topology, table_topology
    from ..theory import is_stable, rate, stable_set, stationary, unstable_message, unsupported

    W = flat_topology(topology, topo_params(kw))
    stepsize = check_float("stepsize", stepsize, 0.0, lo_open=True)
    Wy = None
    if topology_y is not None:
        from ..algorithms import ALGORITHMS

        Wy = checked_topology_y(table_topology(topology_y), ALGORITHMS[algorithm], W.n)
    relax = {"local_steps": local_steps, "topology_y": Wy}
    sp = W.spectrum()
    top, windows = stable_set(W, algorithm, problem, **relax)
    stable = is_stable(W, algorithm, stepsize, problem, **relax)  # as stationary judges it
    out = {"algorithm": algorithm, "topology": W.name, **W.params, "n": W.n,
           **({"local_steps": local_steps} if local_steps != 1 else {}),
           **({"topology_y": Wy.describe()} if Wy is not None else {}),
           "problem": problem, "noise": noise, "sigma2": sigma2, "d": d, "stepsize": stepsize,
           "lambda2": sp.lambda2, "lambda_n": sp.lambda_n, "p": sp.p, "c": sp.c,
           **({"record_every": record_every} if record_every is not None else {}),
           "max_stepsize": top, "stable_stepsizes": [list(w) for w in windows],
           "stable": stable, "rate": rate(W, algorithm, stepsize, problem, **relax)}
    if stable and out["rate"] < 1.0:  # steps per e-fold of the slowest mode's error
        out["time_constant"] = 1.0 / (1.0 - out["rate"])
    if stable:
        reason = unsupported(algorithm, problem)
        if reason:
            out["stationary"] = f"not covered: {reason}"
        else:
            out.update(stationary(W, algorithm, stepsize, sigma2, problem, noise, d, **relax,
                                  record_every=record_every))
    if as_json:
        click.echo(json_line(out))
    else:
        for k, v in out.items():
            if k == "stable_stepsizes":  # open intervals
                v = " or ".join(f"({lo:.12g}, {hi:.12g})" for lo, hi in v) or "none"
            click.echo(f"{k:>16}  {v:.12g}" if isinstance(v, float) else f"{k:>16}  {v}")
        if "time_constant" in out and "loss_avg" in out and noise != "none":
            from ..analysis.stats import MIN_TIME_CONSTANTS

            steps = 2 * MIN_TIME_CONSTANTS * out["time_constant"]
            click.echo(f"note: a run's plateau (the mean of the records in the last half of "
                       f"the run) can measure these floors only from about {steps:.3g} steps "
                       f"on ({2 * MIN_TIME_CONSTANTS:g} time constants; docs/paper.md)")
    if not stable:
        raise ResultError(unstable_message(W, algorithm, stepsize, problem, **relax,
                                           known=(top, windows)))


COMMANDS = [theory_cmd]
