"""``fastgt report`` on tiny sweeps: transient cells flagged, sweeps kept apart, figures and
slopes.md that say what was run, what the error bars are and which points they cannot show."""


import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

import fastgt
from fastgt import theory
from fastgt.paper.report import report
from fastgt.sweep.cellrun import run_cells
from fastgt.sweep.grid import parse_spec
from fastgt.sweep.storage import Store

pytestmark = pytest.mark.usefixtures("one_numba_thread")

#: GT on a 24-node interpolated ring, Setup A. At gamma = 0.05 the slowest mode of
#: alpha = 0.999 decays like 1 - 1/251 per step (theory.rate), so its 1000 steps are 4 time
#: constants and its plateau window (steps 500-1000) starts after 2: deliberately transient.
#: The other alphas have time constants of 10-41 steps (12-50 of them before the window).
#: alpha = 0 is the complete graph: its consensus is rounding error (~1e-36).
SPEC = """
[run]
topology = "interp_ring"
n = 24
d = 4
stepsize = 0.05
steps = 1000
record_every = 20
[[grid]]
alpha = [0.0, 0.5, 0.8, 0.9, 0.95, 0.999]
seed = [0, 1]
"""
STATIONARY = [0.5, 0.8, 0.9, 0.95]


def write_sweep(directory, spec: str) -> None:
    """Run the cells of ``spec`` in this process (one compiled loop) and store them."""
    cells = parse_spec(spec).cells()
    results = run_cells([c.params for c in cells])
    Store(str(directory)).write([(cell.id, cell.params, row, trace, meta)
                                 for cell, (row, trace, meta) in zip(cells, results)])


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    directory = tmp_path_factory.mktemp("reports") / "tiny"
    write_sweep(directory, SPEC)
    return directory


class Saved(list):
    """Every figure saved while active: [(file name, Figure)]."""

    def __enter__(self):
        self.patch = pytest.MonkeyPatch()
        original = Figure.savefig

        def savefig(fig, fname, *args, **kwargs):
            self.append((str(fname), fig))
            return original(fig, fname, *args, **kwargs)

        self.patch.setattr(Figure, "savefig", savefig)
        return self

    def __exit__(self, *exc):
        self.patch.undo()


@pytest.fixture
def saved():
    with Saved() as figures:
        yield figures


@pytest.fixture(scope="module")
def reported(sweep, tmp_path_factory):
    """report() of ``sweep`` with the defaults: (table, output directory, saved figures)."""
    out = tmp_path_factory.mktemp("report")
    with Saved() as figures:
        table, _ = report(str(sweep), str(out))
    return table, out, figures


def pngs(saved):
    return [(name, fig) for name, fig in saved if name.endswith(".png")]


def texts(fig) -> str:
    """Every text of the figure, whitespace (line breaks of wrapped titles) made single spaces."""
    return " ".join(" ".join(t.get_text().split()) for t in fig.findobj(Text))


def test_transient_cell_is_hollow_listed_and_left_out_of_the_fits(sweep, reported, tmp_path):
    W = fastgt.topology("interp_ring", n=24, alpha=0.999)
    tau = 1 / (1 - theory.rate(W, "gt", 0.05))
    assert 200 < tau < 300  # the premise of SPEC: 1000 steps are 4 time constants

    table, out, saved = reported
    # the four stationary alphas are fitted; 0.999 is not, alpha = 0 cannot be drawn
    assert table["points"].tolist() == [4] * 4
    cells, _ = fastgt.load(str(sweep), traces=False)
    means = cells.groupby("alpha")[["consensus", "p"]].mean().loc[STATIONARY]
    expected = np.polyfit(np.log(1 / means["p"]), np.log(means["consensus"]), 1)[0]
    first = table.iloc[0]
    assert first["x"] == "1/p" and first["slope_simulated"] == pytest.approx(expected, rel=1e-9)

    md = (out / "slopes.md").read_text()
    transient = md.split("## Transient cells")[1].split("##")[0]
    for seed in (0, 1):
        assert f"alpha = 0.999, seed {seed}: ran 1000 steps = {1000 / tau:.2g} time constants" \
            in transient
    assert "alpha = 0.5," not in transient and "alpha = 0.95," not in transient

    # hollow markers at the transient point, filled ones at the fitted points
    (_, fig), = pngs(saved)
    p = cells.groupby("alpha")["p"].mean()
    for ax in fig.axes[:1]:
        markers = [ln for ln in ax.get_lines() if ln.get_marker() == "o"]
        hollow = [ln for ln in markers if ln.get_markerfacecolor() == "none"]
        filled = [ln for ln in markers if ln.get_markerfacecolor() != "none"]
        np.testing.assert_allclose(np.asarray(hollow[0].get_xdata(), float), [1 / p[0.999]])
        np.testing.assert_allclose(np.sort(np.asarray(filled[0].get_xdata(), float)),
                                   np.sort(1 / p[STATIONARY].to_numpy()))

    kept, _ = report(str(sweep), str(tmp_path), include_transient=True)
    assert kept["points"].tolist() == [5] * 4


def test_two_sweeps_of_one_family_are_reported_apart(tmp_path, saved):
    base = ('[run]\ntopology = "interp_ring"\nn = 16\nd = 2\nsteps = 1000\nrecord_every = 50\n'
            "[[grid]]\nseed = [0, 1]\n")
    write_sweep(tmp_path / "runs" / "a", base + "alpha = [0.5, 0.9]\n")
    write_sweep(tmp_path / "runs" / "b", base + "alpha = [0.6, 0.8, 0.95]\n")
    table, files = report(str(tmp_path / "runs"), str(tmp_path / "out"))
    assert sorted(f.name for f in files if f.suffix == ".png") == [
        "a_setupA_interp_ring_gt.png", "b_setupA_interp_ring_gt.png"]
    assert table.groupby("sweep")["points"].apply(list).to_dict() == {"a": [2] * 4, "b": [3] * 4}
    rows = [r for r in (tmp_path / "out" / "slopes.md").read_text().splitlines()
            if r.startswith(("| a |", "| b |"))]
    assert len(rows) == 8
    for name, fig in pngs(saved):
        sweep = name.rsplit("/", 1)[-1][0]
        assert f"sweep {sweep} ({tmp_path / 'runs' / sweep})" in texts(fig)


def test_figures_and_slopes_say_what_was_run_and_what_they_leave_out(sweep, reported):
    _, out, saved = reported
    md = (out / "slopes.md").read_text()
    header = md.split("| sweep |")[0]
    (_, fig), = pngs(saved)
    for where in (header, texts(fig)):
        assert f"sweep tiny ({sweep})" in where
        for fact in ("n = 24", "d = 4", "steps = 1000", "stepsize = 0.05",
                     "error bars: 95% CI over 2 seeds"):
            assert fact in where, (fact, where)
    # alpha = 0 (the complete graph, consensus ~1e-36) is named, in slopes.md and the figure
    cells, _ = fastgt.load(str(sweep), traces=False)
    assert cells.loc[cells.alpha == 0, "consensus"].max() < 1e-25
    not_drawn = md.split("## Points not drawn")[1]
    assert "alpha = 0 (2 cells): p = 1" in not_drawn
    assert "not drawn: alpha = 0" in texts(fig)


def overlapping_tick_labels(fig):
    """Pairs of visible tick labels (within the view) whose drawn extents intersect."""
    FigureCanvasAgg(fig)
    fig.canvas.draw()
    found = []
    for ax in fig.axes:
        for axis, coord in ((ax.xaxis, 0), (ax.yaxis, 1)):
            lo, hi = sorted(axis.get_view_interval())
            boxes = []
            for minor in (False, True):
                locs = axis.get_minorticklocs() if minor else axis.get_majorticklocs()
                ticks = axis.get_minor_ticks(len(locs)) if minor else axis.get_major_ticks(len(locs))
                for loc, tick in zip(locs, ticks):
                    label = tick.label1
                    inside = lo * (1 - 1e-9) <= loc <= hi * (1 + 1e-9)
                    if inside and label.get_visible() and label.get_text():
                        boxes.append((label.get_text(), label.get_window_extent()))
            for i, (ta, a) in enumerate(boxes):
                for tb, b in boxes[i + 1:]:
                    if a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1:
                        found.append((ax.get_xlabel(), coord, ta, tb))
    return found


def test_report_tick_labels_never_overlap(reported):
    (_, fig), = pngs(reported[2])
    assert len(fig.axes) == 4
    assert overlapping_tick_labels(fig) == []
    # every panel keeps labels on both axes
    for ax in fig.axes:
        assert any(t.get_text() for t in ax.get_xticklabels(which="both"))
        assert any(t.get_text() for t in ax.get_yticklabels(which="both"))


def test_tracking_report_has_no_paper_bound(sweep, reported, tmp_path):
    from click.testing import CliRunner

    from fastgt.cli.core import report_cmd

    table, out, _ = reported
    assert "paper's bound" in (out / "slopes.md").read_text()
    assert table["paper_bound_slope"].tolist() == [1.0, 0.5, pytest.approx(1 / 3), 1.0]
    res = CliRunner().invoke(report_cmd, [str(sweep), "--out", str(tmp_path), "--metric",
                                          "tracking", "--include-transient"])
    assert res.exit_code == 0, res.output
    md = (tmp_path / "slopes.md").read_text()
    assert md.startswith("# Log-log slopes of tracking") and "paper's bound" not in md
    rows = [r.split("|")[1:-1] for r in md.splitlines() if r.startswith("| tiny |")]
    # the transient point is fitted too, and so is alpha = 0: on the complete graph the
    # tracking error (noise differences between nodes) is not 0, only consensus is
    assert [r[-1].strip() for r in rows] == ["6"] * 4
    assert "## Transient cells (hollow markers, fitted)" in md


def test_report_draws_traces_against_a_cost_axis(tmp_path, saved):
    """``curves=`` adds, beside each figure, every trace of the metric against the chosen
    axis: a line per cell, its x the cells' recorded comm_rounds (GT with 2 local steps: one
    round every second step), its y
    the recorded metric; another axis is a one-line error before anything is drawn."""
    write_sweep(tmp_path / "sw", SPEC.replace("steps = 1000", "steps = 100")
                .replace("record_every = 20", "record_every = 10\nlocal_steps = 2"))
    _, files = report(str(tmp_path / "sw"), str(tmp_path / "out"), curves="comm_rounds")
    assert [f.name for f in files if "_vs_" in f.name] == [
        "setupA_interp_ring_gt_vs_comm_rounds.png", "setupA_interp_ring_gt_vs_comm_rounds.pdf"]
    (fig,) = [f for name, f in pngs(saved) if name.endswith("_vs_comm_rounds.png")]
    cells, traces = fastgt.load(tmp_path / "sw")
    lines = fig.axes[0].lines
    assert len(lines) == len(cells) == 12 and fig.axes[0].get_xlabel() == "comm_rounds"
    title = " ".join(fig.axes[0].get_title().split())  # what was run, as the figure's says
    assert title.startswith("sweep sw, Setup A; n = 24, d = 4, steps = 100, stepsize = "), title
    one = traces[traces["id"] == min(cells["id"])].sort_values("step")
    np.testing.assert_array_equal(lines[0].get_xdata(), one["comm_rounds"])
    np.testing.assert_array_equal(lines[0].get_ydata(), one["consensus"])
    assert (one["comm_rounds"] == one["step"] // 2).all() and one["step"].max() == 100
    with pytest.raises(fastgt.FastGTError, match="curves='rounds' is invalid"):
        report(str(tmp_path / "sw"), str(tmp_path / "out2"), curves="rounds")


def test_cells_outside_the_paper_sweeps_are_counted_not_drawn_and_names_are_safe(tmp_path):
    """A report draws the paper's cells only (the quadratic problem among them: a
    hetero_quadratic cell is no Setup A) and says how many others it left out; a varying
    topology_y table names its files without JSON's quotes and braces."""
    spec = ('[run]\ntopology = "ring"\nn = 8\nd = 2\nsteps = 200\nrecord_every = 20\n'
            '[[grid]]\nself_weight = [0.3, 0.5]\ntopology_y = [{topology = "ring", n = 8}, '
            '{topology = "complete", n = 8}]\n'
            '[[grid]]\nself_weight = [0.3, 0.5]\n'  # no topology_y: "none", not "nan"
            '[[grid]]\nproblem = "hetero_quadratic"\n'
            '[[grid]]\ntopology = "one_peer_exponential"\nnoise = "gaussian"\n')
    write_sweep(tmp_path / "mixed", spec)
    with Saved() as figures:
        report(str(tmp_path / "mixed"), str(tmp_path / "out"))
    names = [name.rsplit("/", 1)[-1] for name, _ in figures]
    assert names and all(set(n) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                           "0123456789._=-") for n in names), names
    assert any("topology_y_n_8_topology_complete" in n for n in names), names
    assert any(n.endswith("topology_ynone.png") for n in names), names
    assert not any("nan" in n for n in names), names
    md = (tmp_path / "out" / "slopes.md").read_text()
    assert "topology_y=none" in md and "topology_y=nan" not in md, md
    assert "6 cells of ring" in md and "2 other ok cells left out (not interp_ring or ring, " \
        "gaussian or structured noise, the quadratic problem" in md, md


def test_noiseless_cells_beside_the_paper_sweeps_leave_their_names_alone(tmp_path):
    """A noise = "none" block in a paper-like sweep: its cells are left out, and their null
    sigma2 does not count as a second sigma2 (file names and titles as without them)."""
    base = ('[run]\ntopology = "ring"\nn = 8\nd = 2\nsteps = 200\nrecord_every = 20\n'
            '[[grid]]\nself_weight = [0.3, 0.5]\nnoise = ["gaussian", "structured"]\n')
    names, none = [], '[[grid]]\nself_weight = [0.3, 0.5]\nnoise = "none"\n'
    for name, extra in (("plain", ""), ("with_none", none)):
        write_sweep(tmp_path / name, base + extra)
        with Saved() as figures:
            report(str(tmp_path / name), str(tmp_path / f"out_{name}"))
        names.append(sorted(n.rsplit("/", 1)[-1] for n, _ in figures))
    # the paper sweeps' figures: Setup A and B, each a png and a pdf, named alike both times
    assert len(names[0]) == 4 and names[0] == names[1], names
    assert not any("sigma2" in n for n in names[0]), names


def test_cells_of_one_topology_draw_no_figure(tmp_path):
    """(A user trial: a sweep over algorithms and stepsizes on one ring gave 32 figures of
    one point each, slope nan.) A figure needs two values or more of its swept parameter;
    cells without are left out, said so in slopes.md, and a sweep of only those is refused."""
    one = '[run]\ntopology = "ring"\nn = 8\nd = 2\nsteps = 100\nrecord_every = 20\n'
    write_sweep(tmp_path / "one", one + '[[grid]]\nalgorithm = ["gt", "dsgd"]\nseed = [0, 1]\n')
    with pytest.raises(fastgt.FastGTError, match="has no ok cells of the paper's sweeps .*two "
                                                 "values or more of alpha or self_weight"):
        report(str(tmp_path / "one"), str(tmp_path / "out_one"))
    write_sweep(tmp_path / "mixed", one + '[[grid]]\nself_weight = [0.3, 0.5]\n'
                                          '[[grid]]\nalgorithm = "dsgd"\nstepsize = 0.02\n')
    with Saved() as figures:
        report(str(tmp_path / "mixed"), str(tmp_path / "out_mixed"))
    assert sorted(n.rsplit("/", 1)[-1] for n, _ in figures) == [
        "setupA_ring_gt.pdf", "setupA_ring_gt.png"]
    assert "1 other ok cells left out" in (tmp_path / "out_mixed" / "slopes.md").read_text()
