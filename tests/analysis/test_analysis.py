"""Analysis helpers (exact values) and the plot command on a hand-made results directory."""

import math

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import fastgt
from fastgt import METRICS
from fastgt.analysis import aggregate, loglog_slope, plateau, plateau_checks
from fastgt.cli.sweep import plot as plot_cmd
from fastgt.sweep.grid import make_cell
from fastgt.sweep.storage import Store, load

T_975_3 = 3.182446305284263  # 97.5% quantile of Student's t with 3 degrees of freedom (tables)


def _cells_frame():
    rows = []
    for n, vals in ((8, [1.0, 2.0, 3.0, 6.0]), (16, [2.0, 2.0, 2.0, 2.0])):
        for seed, v in enumerate(vals):
            rows.append({"id": f"{n}-{seed}", "status": "ok", "topology": "ring", "n": n,
                         "seed": seed, "loss_nodes": v})
    rows.append({"id": "x", "status": "diverged", "topology": "ring", "n": 8, "seed": 9,
                 "loss_nodes": math.nan})
    return pd.DataFrame(rows)


def test_aggregate_mean_and_t_interval_over_seeds():
    agg = aggregate(_cells_frame(), values="loss_nodes").set_index("n")
    assert list(agg.index) == [8, 16]
    a = agg.loc[8]
    assert a["cells"] == 4 and a["loss_nodes_count"] == 4  # the diverged cell is left out
    assert a["loss_nodes_mean"] == pytest.approx(3.0)
    sd = math.sqrt(((1 - 3) ** 2 + (2 - 3) ** 2 + 0 + (6 - 3) ** 2) / 3)
    assert a["loss_nodes_std"] == pytest.approx(sd)
    half = T_975_3 * sd / 2
    assert a["loss_nodes_ci_low"] == pytest.approx(3 - half, rel=1e-12)
    assert a["loss_nodes_ci_high"] == pytest.approx(3 + half, rel=1e-12)
    b = agg.loc[16]
    assert b["loss_nodes_ci_low"] == b["loss_nodes_ci_high"] == 2.0
    one = aggregate(_cells_frame().iloc[:1], values=["loss_nodes"])
    assert np.isnan(one.loc[0, "loss_nodes_ci_low"])  # one seed: no interval
    everything = aggregate(_cells_frame(), values="loss_nodes", status=None, by="topology")
    assert everything.loc[0, "cells"] == 9 and everything.loc[0, "loss_nodes_count"] == 8


def test_plateau_is_the_tail_mean():
    trace = pd.DataFrame({"step": np.arange(0, 1001, 100), "loss_nodes": np.arange(11.0)})
    assert plateau(trace) == pytest.approx(np.mean([5, 6, 7, 8, 9, 10]))
    assert plateau(trace, tail=0.2) == pytest.approx(9.0)
    two = pd.concat([trace.assign(id="a"), trace.assign(id="b", loss_nodes=2 * trace.loss_nodes)])
    got = plateau(two)
    assert got.to_dict() == pytest.approx({"a": 7.5, "b": 15.0})
    with pytest.raises(ValueError, match="tail"):
        plateau(trace, tail=0)


def test_plateau_checks_time_constants_and_halves():
    rng = np.random.default_rng(5)
    steps = np.arange(0, 2001, 20)  # 101 records: the plateau window is records 50..100
    noise = 1 + 0.01 * rng.standard_normal(len(steps))
    step_up = noise + (steps >= 1500)  # the window's second half sits 1.0 higher
    traces = pd.concat([
        pd.DataFrame({"id": "slow", "step": steps[:21], "consensus": noise[:21]}),
        pd.DataFrame({"id": "fast", "step": steps, "consensus": noise}),
        pd.DataFrame({"id": "jump", "step": steps, "consensus": step_up}),
        pd.DataFrame({"id": "unknown", "step": steps, "consensus": noise}),
        pd.DataFrame({"id": "unknown_jump", "step": steps, "consensus": step_up}),
    ])
    cells = pd.DataFrame({"id": ["slow", "fast", "jump", "unknown", "unknown_jump"],
                          "steps": [400, 2000, 2000, 2000, 2000],
                          "theory_rate": [0.99, 0.5, 0.5, math.nan, math.nan]})
    got = plateau_checks(cells, traces, "consensus")
    # slow: tau = 100 steps; 21 records, the window starts at record 10 = step 200
    assert got.loc["slow", "window_start"] == 200
    assert got.loc["slow", "elapsed"] == pytest.approx(2.0)
    assert got.loc["slow", "transient"]
    assert got.loc["slow", "reason"].startswith("ran 400 steps = 4 time constants")
    assert got.loc["fast", "elapsed"] == pytest.approx(1000 * 0.5)
    assert got.loc["jump", "half1"] == pytest.approx(noise[50:75].mean())
    assert got.loc["jump", "half2"] == pytest.approx(step_up[75:].mean())
    assert got["transient"].to_dict() == {"slow": True, "fast": False, "jump": True,
                                          "unknown": False, "unknown_jump": True}
    assert "halves of its plateau window disagree" in got.loc["jump", "reason"]
    assert math.isnan(got.loc["unknown", "elapsed"])


def test_plateau_checks_take_the_plateaus_records_with_local_steps():
    """With local steps the window is that of the records every record_every steps, as
    the plateau's (engine): a last record off that grid, on another phase, is left out."""
    rng = np.random.default_rng(6)
    steps = np.r_[np.arange(0, 2000, 20), 2005]  # the last step off the grid of 20
    values = 1 + 0.01 * rng.standard_normal(len(steps))
    values[-1] = 50.0  # another phase of the period: far off
    traces = pd.DataFrame({"id": "c", "step": steps, "consensus": values})
    cells = pd.DataFrame({"id": ["c"], "steps": [2005], "theory_rate": [0.5],
                          "local_steps": [5], "record_every": [20]})
    got = plateau_checks(cells, traces, "consensus")
    assert got.loc["c", "half2"] == pytest.approx(values[75:100].mean())
    assert not got.loc["c", "transient"]
    plain = plateau_checks(cells.assign(local_steps=1), traces, "consensus")
    assert plain.loc["c", "half2"] > 2  # without local steps every record counts
    gone = plateau_checks(cells.assign(status="diverged"), traces, "consensus").loc["c"]
    assert gone["transient"] and gone["reason"] == "it diverged: no plateau"  # no "0 time
    assert math.isnan(gone["elapsed"])  # constants, r = 3" of a run cut short


def test_loglog_slope_recovers_power_laws():
    x = np.array([1.0, 2.0, 5.0, 10.0, 100.0])
    df = pd.DataFrame({"x": np.concatenate([x, x]), "y": np.concatenate([3 * x**-1.5, 0.5 * x**2]),
                       "g": ["a"] * 5 + ["b"] * 5})
    fit = loglog_slope(df[df.g == "a"], "x", "y")
    assert fit["slope"] == pytest.approx(-1.5) and fit["intercept"] == pytest.approx(math.log(3))
    assert fit["r2"] == pytest.approx(1.0) and fit["points"] == 5
    by = loglog_slope(df, "x", "y", by="g")
    assert by["slope"].to_dict() == pytest.approx({"a": -1.5, "b": 2.0})
    noisy = df[df.g == "a"].assign(y=lambda d: d.y * np.array([1.1, 0.9, 1.0, 1.1, 0.9]))
    assert 0.9 < loglog_slope(noisy, "x", "y")["r2"] < 1.0
    bad = pd.DataFrame({"x": [1.0, -1.0, 2.0], "y": [1.0, 1.0, 0.0]})  # only one usable point
    assert math.isnan(loglog_slope(bad, "x", "y")["slope"])


@pytest.fixture
def results(tmp_path):
    """A results directory written by hand: 2 algorithms x 3 sizes x 2 seeds."""
    store = Store(tmp_path)
    steps = np.arange(0, 1001, 100)
    for alg in ("gt", "dsgd"):
        for n in (8, 16, 32):
            for seed in (0, 1):
                cell = make_cell({"topology": "ring", "n": n, "algorithm": alg, "seed": seed})
                level = (1.0 if alg == "gt" else 3.0) / n * (1 + 0.1 * seed)
                curve = level + np.exp(-steps / 200.0)
                trace = pd.DataFrame({"step": steps, **{m: curve for m in METRICS}})
                row = {"status": "ok", **{m: level for m in METRICS}}
                store.write([(cell.id, cell.params, row, trace, {})])
    return tmp_path


@pytest.mark.parametrize("args,suffix,magic", [
    (["--x", "n", "--hue", "algorithm"], "png", b"\x89PNG"),
    (["--x", "n", "--where", "algorithm=gt", "--logx"], "pdf", b"%PDF"),
    (["--curves", "--hue", "n", "--y", "consensus"], "png", b"\x89PNG"),
    (["--curves", "--hue", "algorithm"], "svg", b"<?xml"),
])
def test_plot_command_writes_figures(results, tmp_path, args, suffix, magic):
    out = tmp_path / f"fig.{suffix}"
    res = CliRunner().invoke(plot_cmd, [str(results), *args, "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_bytes().startswith(magic) and out.stat().st_size > 1000


def test_plot_says_on_the_terminal_when_points_average_other_parameters(results, tmp_path):
    """Without --hue, a point of n averages GT's and D-SGD's cells: said in the title and
    on the terminal; with --hue algorithm (or --where algorithm=gt) nothing is said."""
    out = str(tmp_path / "fig.png")
    note = "each point averages cells of different algorithm (--hue or --where tells them apart)"
    mixed = CliRunner().invoke(plot_cmd, [str(results), "--x", "n", "-o", out])
    assert mixed.exit_code == 0 and note in mixed.output.splitlines(), mixed.output
    for split in (["--hue", "algorithm"], ["--where", "algorithm=gt"]):
        res = CliRunner().invoke(plot_cmd, [str(results), "--x", "n", *split, "-o", out])
        assert res.exit_code == 0 and "averages" not in res.output, res.output


def test_plot_note_counts_only_the_cells_drawn(tmp_path):
    """Cells without --x are not drawn: what varies among them only (here the algorithm
    of the ring's cells, which have no alpha) is no average of a point."""
    store = Store(tmp_path / "res")
    steps = np.arange(0, 101, 50)
    cells = [({"topology": "interp_ring", "alpha": 0.5, "algorithm": "gt"}, 1.0),
             ({"topology": "ring", "algorithm": "gt"}, 2.0),
             ({"topology": "ring", "algorithm": "dsgd"}, 3.0)]
    for params, level in cells:
        cell = make_cell({"n": 8, **params})
        trace = pd.DataFrame({"step": steps, **{m: level + 0 * steps for m in METRICS}})
        store.write([(cell.id, cell.params, {"status": "ok", **{m: level for m in METRICS}},
                      trace, {})])
    res = CliRunner().invoke(plot_cmd, [str(tmp_path / "res"), "--x", "alpha", "-o",
                                        str(tmp_path / "fig.png")])
    assert res.exit_code == 0 and "averages" not in res.output, res.output


def test_plot_data_are_the_seed_means(results):
    from fastgt.analysis.plots import summary

    cells, _ = load(results)
    fig = summary(cells, x="n", y="loss_nodes", hue="algorithm")
    lines = {c.get_label(): c.lines[0] for c in fig.axes[0].containers}  # errorbar containers
    for alg, c in (("gt", 1.0), ("dsgd", 3.0)):
        x, y = lines[alg].get_data()
        np.testing.assert_allclose(np.asarray(x, float), [8, 16, 32])
        np.testing.assert_allclose(y, c / np.array([8, 16, 32]) * 1.05)  # mean of 1.0x, 1.1x


def test_summary_names_unordered_values_and_leaves_out_cells_without_x(results):
    """A text or bool x (algorithm, split, lazy) at evenly spaced ticks labelled by its
    values (not 0, 1, 2); cells that x does not apply to (null) left out, the title says
    how many; a hue without a value is "not set" in the legend."""
    from fastgt.analysis.plots import curves, summary

    cells, traces = load(results)
    fig = summary(cells, x="algorithm", hue="n")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["dsgd", "gt"]
    x, y = ax.containers[0].lines[0].get_data()  # n = 8: dsgd at 0, gt at 1
    np.testing.assert_allclose(np.asarray(x, float), [0, 1])
    np.testing.assert_allclose(y, np.array([3.0, 1.0]) / 8 * 1.05)
    # a parameter null where it does not apply, fixed within each point: not averaged over
    noiseless = cells["n"] == 8
    mixed = cells.assign(noise=np.where(noiseless, "none", "gaussian"),
                         sigma2=np.where(noiseless, np.nan, 1.0))
    title = summary(mixed, x="n", hue="algorithm").axes[0].get_title()
    assert "mean over seeds;" in title and "sigma2 = 1" in title, title
    # set in some cells of a point and not in others, with nothing to say why: averaged
    half = cells.assign(topology_y=np.where(cells["seed"] == 0, None, '{"n":8}'))
    title = summary(half, x="n", hue="algorithm").axes[0].get_title()
    assert "mean over seed, topology_y;" in title, title
    lazy = summary(cells.assign(lazy=cells["n"] > 8), x="lazy").axes[0]
    assert [t.get_text() for t in lazy.get_xticklabels()] == ["False", "True"]
    alpha = cells["n"].map({8: None, 16: 0.5, 32: 5.0}).astype(float)
    part = summary(cells.assign(split_alpha=alpha), x="split_alpha", hue="algorithm").axes[0]
    assert part.get_title().endswith(f"; {(cells['n'] == 8).sum()} cells without split_alpha "
                                     "left out")
    assert len(part.containers) == cells["algorithm"].nunique() > 0
    for c in part.containers:
        np.testing.assert_allclose(np.asarray(c.lines[0].get_data()[0], float), [0.5, 5.0])
    with pytest.raises(fastgt.FastGTError, match="x='split_alpha' has no value in these cells"):
        summary(cells.assign(split_alpha=np.nan), x="split_alpha")
    legend = summary(cells.assign(split_alpha=alpha), x="n", hue="split_alpha").axes[0]
    assert [t.get_text() for t in legend.get_legend().get_texts()] == ["0.5", "5.0", "not set"]
    hued = traces.assign(split_alpha=traces["n"].map({8: None, 16: 0.5, 32: 5.0}).astype(float))
    ax = curves(hued, hue="split_alpha").axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["0.5", "5.0", "not set"]
    assert {ln.get_color() for ln in ax.lines if ln.get_label() == "not set"} == {"0.5"}


def test_summary_title_says_what_was_run_and_what_the_bars_are(results, tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    from fastgt.analysis.plots import summary

    cells, _ = load(results)
    title = summary(cells, x="n", hue="algorithm", sweep="results/x").axes[0].get_title()
    assert title.startswith("sweep results/x; d = 100, steps = 1000, stepsize = 0.01")
    assert "mean over seeds; error bars: 95% CI over 2 seeds" in title
    # one seed per point: no bars, and the title says so
    one = summary(cells[cells.seed == 0], x="n", hue="algorithm").axes[0].get_title()
    assert "one seed per point: no error bars" in one and "sweep" not in one
    # averaged over another parameter too: the bars are over cells, and the title says which
    mixed = summary(cells, x="n").axes[0].get_title()
    assert "mean over seed, algorithm; error bars: 95% CI over 4 cells (Student t)" in mixed
    mixed = summary(cells[cells.seed == 0], x="n").axes[0].get_title()
    assert "mean over algorithm; error bars: 95% CI over 2 cells (Student t)" in mixed
    # sigma2 only where a noise adds it (params.CONDITIONAL)
    assert "sigma2 = 1" in title
    quiet = summary(cells.assign(noise="minibatch"), x="n", hue="algorithm")
    assert "sigma2" not in quiet.axes[0].get_title()
    # fastgt plot names the directory it read
    saved = []

    def savefig(fig, name, *args, **kwargs):
        saved.append(fig)
        open(name, "wb").close()

    monkeypatch.setattr(Figure, "savefig", savefig)
    res = CliRunner().invoke(plot_cmd, [str(results), "--x", "n", "-o", str(tmp_path / "p.png")])
    assert res.exit_code == 0, res.output
    assert saved[0].axes[0].get_title().startswith(f"sweep {results}; ")


@pytest.mark.parametrize("args,fragment", [
    (["--x", "nope"], "x='nope' is not a column of the results"),
    (["--x", "n", "--where", "n=5"], "no results to plot"),
    (["--x", "n", "--where", "size=5"], "'size' is not a column"),
    (["--x", "n", "--where", 'topology_y={topology = "ring", n = 8},{topology = "star", n = 8}'],
     "no results to plot"),  # tables as values: one each, in the cells' spelling
    (["--x", "n", "--where", "n=[8, 16]"], "n=[8, 16] is invalid: allowed an integer"),
    ([], "--x is required: allowed a parameter name"),
])
def test_plot_errors(results, tmp_path, args, fragment):
    res = CliRunner().invoke(plot_cmd, [str(results), *args, "-o", str(tmp_path / "f.png")])
    assert res.exit_code == 2 and fragment in res.output


def test_plot_says_first_what_is_wrong_with_dir_and_never_draws_nothing(results, tmp_path):
    """A missing DIR is named before a missing --x; traces without a value of --y (the
    tracking of an algorithm without a tracker) are an error, not an empty figure."""
    res = CliRunner().invoke(plot_cmd, [str(tmp_path / "nope"), "-o", str(tmp_path / "f.png")])
    assert res.exit_code == 2 and "does not exist" in res.output
    store = Store(results)
    cell = make_cell({"topology": "ring", "n": 8, "algorithm": "dsgd", "seed": 7})
    trace = pd.DataFrame({"step": [0, 10], **{m: [1.0, 0.5] for m in METRICS},
                          "tracking": [np.nan, np.nan]})
    store.write([(cell.id, cell.params, {"status": "ok"}, trace, {})])
    res = CliRunner().invoke(plot_cmd, [str(results), "--curves", "--y", "tracking", "--where",
                                        "seed=7", "-o", str(tmp_path / "f.png")])
    assert res.exit_code == 2 and "no trace of these cells has a value of 'tracking'" in res.output
    assert not (tmp_path / "f.png").exists()


def test_curves_colour_a_wide_positive_parameter_in_log_scale(results):
    from fastgt.analysis.plots import FEW, curves

    _, traces = load(results)
    ids = sorted(traces["id"].unique())  # more values than a legend takes: a colour bar
    assert len(ids) > FEW
    steps = dict(zip(ids, np.geomspace(0.001, 0.1, len(ids))))
    wide = traces.assign(stepsize=traces["id"].map(steps))
    scales = [curves(t, hue="stepsize").axes[1].get_yscale()  # the colour bar's
              for t in (wide, wide.assign(stepsize=wide["stepsize"] + 1))]
    assert scales == ["log", "linear"]


def test_curves_title_says_what_was_run(results):
    from fastgt.analysis.plots import curves

    _, traces = load(results)
    title = curves(traces, hue="algorithm", sweep="results/x").axes[0].get_title()
    head, tail = title.split("\n")
    assert head.startswith("sweep results/x; ") and "steps = 1000" in head
    assert tail == f"{traces['id'].nunique()} cells, one trace each (no error bars)"


def test_curves_against_communication_rounds():
    """With local steps a trace drawn against comm_rounds is compressed k-fold against the
    steps; any other x is a one-line error naming the allowed axes."""
    from fastgt import FastGTError
    from fastgt.analysis.plots import curves

    res = fastgt.run(topology=fastgt.topology("ring", n=8), d=3, steps=20, record_every=4,
                     local_steps=4)
    traces = res.trace.assign(id="a", algorithm="gt")
    line = curves(traces, x="comm_rounds").axes[0].lines[0]
    np.testing.assert_array_equal(line.get_xdata(), traces["step"] // 4)
    assert curves(traces, x="comm_rounds").axes[0].get_xlabel() == "comm_rounds"
    # on a log axis the records at 0 rounds are left out, not drawn as a flat start
    logged = curves(traces, x="comm_rounds", logx=True).axes[0].lines[0].get_xdata()
    np.testing.assert_array_equal(logged, (traces["step"] // 4)[traces["step"] >= 4])
    silent = traces.assign(comm_rounds=0)  # local_steps beyond the run: nothing to draw
    with pytest.raises(FastGTError, match="no record of these traces has comm_rounds > 0"):
        curves(silent, x="comm_rounds", logx=True)
    with pytest.raises(FastGTError, match="x='alpha' is invalid: allowed one of 'step', "
                                          "'comm_rounds', 'grad_evals'"):
        curves(traces, x="alpha")


def test_steps_to_is_the_first_record_of_the_final_run_below_eps():
    """A dip below eps that does not last does not count; NaN (diverged) is not below; a
    trace that ends above eps never reached it; every counted cost is given."""
    from fastgt.analysis import steps_to

    tr = pd.DataFrame({
        "id": ["a"] * 5 + ["b"] * 5 + ["c"] * 3 + ["d"] * 2,
        "step": [0, 2, 4, 6, 8] * 2 + [0, 2, 4] + [0, 2],
        "comm_rounds": [0, 1, 2, 3, 4] * 2 + [0, 1, 2] + [0, 1],
        "loss_nodes": [1, 0.1, 1e-3, 0.01, 1e-4, 1, 1e-5, 1e-5, 1e-5, 1e-5, 1, np.nan, 1e-9,
                       1e-3, 1.0]})
    got = steps_to(tr.sample(frac=1, random_state=0), 1e-2).set_index("id")  # any row order
    np.testing.assert_array_equal(got["steps_to"], [8, 2, 4, np.nan])
    np.testing.assert_array_equal(got["comm_rounds_to"], [4, 1, 2, np.nan])
    with pytest.raises(fastgt.FastGTError, match="eps=0 is invalid"):
        steps_to(tr, 0)
    one = steps_to(tr[tr["id"] == "a"].drop(columns="id"), 1e-2)  # one run's trace, no id
    assert one.to_dict("records") == [{"id": "run", "steps_to": 8.0, "comm_rounds_to": 4.0}]
    # hold: how many records at the end must be below (a's last one alone is a chance dip)
    held = steps_to(tr, 1e-2, hold=2).set_index("id")["steps_to"]
    np.testing.assert_array_equal(held, [np.nan, 2, np.nan, np.nan])
    np.testing.assert_array_equal(steps_to(tr, 1e-2, hold=4).set_index("id")["steps_to"],
                                  [np.nan, 2, np.nan, np.nan])
    assert steps_to(tr, 1e-2, hold=5)["steps_to"].isna().all()
    with pytest.raises(fastgt.FastGTError, match="hold=0 is invalid"):
        steps_to(tr, 1e-2, hold=0)


def test_best_over_picks_each_configurations_fastest_complete_stepsize():
    """Per algorithm: the stepsize with the least mean steps_to over seeds, among those
    where every seed reached the target (0.5 is fastest for gt on one seed but the other
    never got there); a configuration where none did keeps a row of NaN."""
    from fastgt.analysis import best_over

    rows = []
    for alg, gamma, seed, val in [("gt", 0.1, 0, 40), ("gt", 0.1, 1, 60), ("gt", 0.2, 0, 30),
                                  ("gt", 0.2, 1, 34), ("gt", 0.5, 0, 5), ("gt", 0.5, 1, np.nan),
                                  ("dsgd", 0.1, 0, 80), ("dsgd", 0.1, 1, 90),
                                  ("dsgd", 0.2, 0, 70), ("dsgd", 0.2, 1, 100),
                                  ("extra", 0.1, 0, np.nan), ("extra", 0.1, 1, np.nan)]:
        rows.append({"id": f"{alg}{gamma}{seed}", "algorithm": alg, "stepsize": gamma,
                     "seed": seed, "steps_to": val})
    best = best_over(pd.DataFrame(rows), "stepsize").set_index("algorithm")
    assert best.loc["gt", "stepsize"] == 0.2 and best.loc["gt", "steps_to_mean"] == 32
    assert best.loc["dsgd", "stepsize"] == 0.1 and best.loc["dsgd", "steps_to_mean"] == 85
    assert best.loc["gt", "cells"] == 2 and np.isnan(best.loc["extra", "stepsize"])
    assert str(best["cells"].dtype) == "Int64" and best["cells"].isna().sum() == 1


def test_plot_where_takes_a_list_and_repeats_intersect(results, tmp_path, monkeypatch):
    """--where n=8,32 keeps both sizes; a repeated key keeps what both allow; what was
    drawn are exactly the kept cells' seed means."""
    from matplotlib.figure import Figure

    drawn, save = [], Figure.savefig

    def saving(fig, *args, **kwargs):
        drawn.append(fig)
        return save(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", saving)
    for where, sizes in ((["n=8,32"], [8, 32]), (["n=8,32", "n=32,16"], [32])):
        args = [str(results), "--x", "n", "--hue", "algorithm", "-o", str(tmp_path / "f.png")]
        res = CliRunner().invoke(plot_cmd, args + [a for w in where for a in ("--where", w)])
        assert res.exit_code == 0, res.output
        assert drawn[-1].axes[0].containers
        for container in drawn[-1].axes[0].containers:
            np.testing.assert_allclose(np.asarray(container.lines[0].get_xdata(), float), sizes)
        title = " ".join(drawn[-1].axes[0].get_title().split())  # wrapped where long
        assert title.startswith(f"sweep {results} where {', '.join(where)}; "), title
    res = CliRunner().invoke(plot_cmd, [str(results), "--x", "n", "--where", "n=8",
                                        "--where", "n=16", "-o", str(tmp_path / "g.png")])
    assert res.exit_code == 2 and "no results to plot" in res.output


def test_summary_refuses_what_it_cannot_draw_and_titles_what_it_averages(results):
    """hue = x is one line (a traceback before); a metric without values in every cell is
    refused (a blank figure before); "one cell per point" only where nothing else is
    averaged; what varies among left-out cells only is not named as averaged."""
    from fastgt.analysis.plots import summary

    cells, _ = load(results)
    with pytest.raises(fastgt.FastGTError, match="hue='n' is the x axis"):
        summary(cells, x="n", hue="n")
    with pytest.raises(fastgt.FastGTError, match="no cell with status ok has a value of"):
        summary(cells.assign(accuracy=np.nan), x="n", y="accuracy")
    assert cells["algorithm"].nunique() > 1  # so x = seed averages algorithms
    title = " ".join(summary(cells, x="seed").axes[0].get_title().split())
    assert "one cell per point" not in title and "mean over algorithm" in title, title
    odd = cells.copy()
    first = odd.index[0]
    odd.loc[first, "status"] = "failed"
    odd.loc[first, "stepsize"] = 123.0  # varies only among the left-out cells
    title = " ".join(summary(odd, x="n").axes[0].get_title().split())
    plain = " ".join(summary(cells, x="n").axes[0].get_title().split())
    same = plain.split("; error bars")[0]  # not "mean over seed, algorithm, stepsize"
    assert title.startswith(same + "; error bars") and title.endswith("; left out: 1 failed")


def test_summary_title_counts_the_cells_it_does_not_draw(results):
    from fastgt.analysis.plots import summary

    cells, _ = load(results)
    marked = cells.assign(status=["diverged", "failed", "failed"] + ["ok"] * (len(cells) - 3))
    title = " ".join(summary(marked, x="n").axes[0].get_title().split())
    assert title.endswith("; left out: 2 failed, 1 diverged"), title
    assert "left out" not in summary(cells, x="n").axes[0].get_title()


def test_plot_defaults_follow_the_values(results):
    """accuracy (a share) on a linear axis, other metrics on a log one; a few integer
    values as a legend in the summary's colours and order, not a colour bar; a long
    title wrapped; Python's True and False as bool values of --where."""
    from fastgt.analysis.plots import curves, summary
    from fastgt.sweep.grid import literal

    cells, traces = load(results)
    shares = cells.assign(accuracy=0.5)
    assert summary(shares, x="n", y="accuracy").axes[0].get_yscale() == "linear"
    assert summary(shares, x="n").axes[0].get_yscale() == "log"
    assert summary(shares, x="n", y="accuracy", logy=True).axes[0].get_yscale() == "log"
    fig = curves(traces, hue="n")
    assert len(fig.axes) == 1  # no colour bar
    legend = fig.axes[0].get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["8", "16", "32"]
    from matplotlib.colors import to_hex

    colours = {ln.get_label(): to_hex(ln.get_color()) for ln in fig.axes[0].lines
               if not ln.get_label().startswith("_")}
    drawn = {c.get_label(): to_hex(c.lines[0].get_color())
             for c in summary(cells, x="algorithm", hue="n").axes[0].containers}
    assert colours == drawn
    ids = sorted(traces["id"].unique())
    alpha = traces.assign(alpha=traces["id"].map(dict(zip(ids, [0.9, 0.99, 0.999] * len(ids)))))
    fig = curves(alpha, hue="alpha")  # on a colour bar 0.99 and 0.999 were one colour
    assert len(fig.axes) == 1
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == [
        "0.9", "0.99", "0.999"]
    many = traces.assign(alpha=traces["id"].map(dict(zip(ids, range(len(ids))))) / 7)
    assert traces["id"].nunique() > 10 and len(curves(many, hue="alpha").axes) == 2  # a bar
    long = summary(cells, x="n", sweep="x" * 120).axes[0].get_title()
    assert max(map(len, long.splitlines())) <= 90 + 10  # wrapped (a word may run over)
    assert literal("True") is True and literal("False") is False and literal("true") is True


def test_titles_name_a_problem_and_data_that_are_not_the_defaults():
    from fastgt.analysis.figtext import QUIET, describe_run
    from fastgt.flat import problem_flat_params
    from fastgt.params import PARAMS

    assert QUIET == {"problem": PARAMS["problem"].default,
                     "data": problem_flat_params("logistic")["data"]}
    cells = pd.DataFrame({"n": [8, 8], "problem": ["quadratic"] * 2, "data": [None, None]})
    assert describe_run(cells) == "n = 8"
    cells = pd.DataFrame({"n": [8, 8], "problem": ["logistic", "nonconvex"],
                          "data": ["a.svm", "synthetic"]})
    assert describe_run(cells) == ("n = 8, problem = logistic or nonconvex, "
                                   "data = a.svm or synthetic")
