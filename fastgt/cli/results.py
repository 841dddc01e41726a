"""Commands that only read and tidy a sweep directory: ``fastgt status | compact``. Light:
no numba, no pandas (pyarrow reads the columns they need)."""

from __future__ import annotations

import click

from .exits import user_errors


@click.command("status")
@click.argument("directory", metavar="DIR")
@click.option("--failed", "show_failed", is_flag=True,
              help="also list failed and diverged cells: the parameters that vary, the errors")
@user_errors
def status(directory, show_failed):
    """Counts of done / failed / running / queued / missing cells of the sweep DIR.

    The counts are of the cells of DIR/grid.toml (the spec last run there; every cell of
    DIR without one), those of other specs counted apart. Running and queued cells are
    claimed by a live sweep (queued: submitted, waiting for a worker); missing cells have
    neither a result nor a claim.
    """
    from ..sweep.storage import open_sweep

    store = open_sweep(directory)
    claims = store.claims()  # before the results: a cell written meanwhile is seen done
    live = {k: v for k, v in claims.items() if not store.stale(v)}
    queued = {i for v in live.values() if v.get("state") == "queued" for i in v["ids"]}
    claimed = {i for v in live.values() for i in v["ids"]}
    rows = store.table("cells", ["id", "status"]).to_pylist()
    status_of = {r["id"]: r["status"] for r in rows}
    text, ids = store.spec()
    if text is not None and ids is None:  # a directory of an older fastgt: no grid.ids
        from ..sweep.grid import parse_spec

        ids = [c.id for c in parse_spec(text, f"{directory}/grid.toml").cells()]
    have = set(status_of)
    grid = have | claimed if ids is None else set(ids)  # the counts: grid.toml's cells
    done = [s for i, s in status_of.items() if i in grid]
    n = {k: done.count(k) for k in ("ok", "diverged", "failed")}
    lines = [f"done      {n['ok'] + n['diverged']} (ok {n['ok']}, diverged {n['diverged']})",
             f"failed    {n['failed']}", f"running   {len((claimed - queued) & grid - have)}",
             f"queued    {len(queued & grid - have)}"]
    if ids is not None:
        lines.append(f"missing   {len(grid - have - claimed)} (of {len(grid)} cells in "
                     "grid.toml)")
        other = [s for i, s in status_of.items() if i not in grid]
        busy = ((claimed - queued) - grid - have, queued - grid - have)  # another grid's sweep
        if other or any(busy):
            n = {k: other.count(k) for k in ("ok", "diverged", "failed")}
            live = f"; running {len(busy[0])}, queued {len(busy[1])}" if any(busy) else ""
            lines.append(f"other     {len(other)} results not in grid.toml (ok {n['ok']}, "
                         f"diverged {n['diverged']}, failed {n['failed']}){live}")
    stale = sum(len(v["ids"]) for k, v in claims.items() if k not in live)
    if stale:
        lines.append(f"stale     {stale} cells claimed by dead sweeps (retaken on rerun)")
    click.echo("\n".join(lines))
    if show_failed:
        _list_failed(store, grid)


def _list_failed(store, grid: set) -> None:
    """A line per failed or diverged cell: id, status, the parameters that vary among the
    cells of DIR (which of them it was), its error."""
    import pyarrow.compute as pc

    from ..params import PARAMS

    every = store.table("cells", list(PARAMS))
    varying = [k for k in PARAMS if pc.count_distinct(every[k], mode="all").as_py() > 1]
    bad = store.table("cells", ["id", "status", "error", *varying],
                      where={"status": ["failed", "diverged"]})
    for row in bad.to_pylist():
        what = " ".join(f"{k}={row[k]}" for k in varying if row[k] is not None)
        apart = "" if row["id"] in grid else "  (not in grid.toml)"
        click.echo(f"{row['id']}  {row['status']}  {what + '  ' if what else ''}"
                   f"{row['error']}{apart}")


@click.command("compact")
@click.argument("directory", metavar="DIR")
@user_errors
def compact(directory):
    """Rewrite the result files of the sweep DIR into a few large ones (a sweep does it
    when it finishes; this is for one that was killed, or results written by several).
    Rows computed by another fastgt, whose numbers can differ (their numerics version),
    move to DIR/older/, kept and never loaded.

    Safe beside a running sweep: its files written meanwhile are left for the next
    compaction, and a kill at any point loses nothing.
    """
    from ..sweep.storage import open_sweep

    store = open_sweep(directory)
    before, after = store.compact()
    moved = (f"; {store.moved} cells of another fastgt's numbers moved to older/"
             if store.moved else "")
    click.echo(f"{directory}: {before} cell files -> {after}{moved}")


COMMANDS = [status, compact]
