"""Commands that only read and tidy a sweep directory: ``fastgt status | compact``. Light:
no numba, no pandas (pyarrow reads the columns they need)."""

from __future__ import annotations

import click

from .exits import user_errors


@click.command("status")
@click.argument("directory", metavar="DIR")
@click.option("--failed", "show_failed", is_flag=True,
              help="also list failed and diverged cells with their errors")
@user_errors
def status(directory, show_failed):
    """Counts of done / failed / running / queued / missing cells of the sweep DIR.

    Running and queued cells are claimed by a live sweep (queued: submitted, waiting for a
    worker); missing cells are those of DIR/grid.toml (the spec last run there) without a
    result or a claim.
    """
    import pyarrow.compute as pc

    from ..sweep.storage import open_sweep

    store = open_sweep(directory)
    cells = store.table("cells", ["id", "status"])
    counts = {d["values"]: d["counts"] for d in pc.value_counts(cells["status"]).to_pylist()}
    claims = store.claims()
    live = {k: v for k, v in claims.items() if not store.stale(v)}
    queued = {i for v in live.values() if v.get("state") == "queued" for i in v["ids"]}
    claimed = {i for v in live.values() for i in v["ids"]}
    text, ids = store.spec()
    ok, div, failed = (int(counts.get(k, 0)) for k in ("ok", "diverged", "failed"))
    lines = [f"done      {ok + div} (ok {ok}, diverged {div})", f"failed    {failed}",
             f"running   {len(claimed - queued)}", f"queued    {len(queued)}"]
    if text is not None:
        if ids is None:  # a directory of an older fastgt: no grid.ids beside the spec
            from ..sweep.grid import parse_spec

            ids = [c.id for c in parse_spec(text, f"{directory}/grid.toml").cells()]
        have, ids = set(cells["id"].to_pylist()), set(ids)
        lines.append(f"missing   {len(ids - have - claimed)} (of {len(ids)} cells in grid.toml)")
        if have - ids:
            lines.append(f"other     {len(have - ids)} (results not in grid.toml)")
    stale = sum(len(v["ids"]) for k, v in claims.items() if k not in live)
    if stale:
        lines.append(f"stale     {stale} cells claimed by dead sweeps (retaken on rerun)")
    click.echo("\n".join(lines))
    if show_failed:
        bad = store.table("cells", ["id", "status", "error"],
                          where={"status": ["failed", "diverged"]})
        for row in bad.to_pylist():
            click.echo(f"{row['id']}  {row['status']}  {row['error']}")


@click.command("compact")
@click.argument("directory", metavar="DIR")
@user_errors
def compact(directory):
    """Rewrite the result files of the sweep DIR into a few large ones (a sweep does it
    when it finishes; this is for one that was killed, or results written by several).

    Safe beside a running sweep: its files written meanwhile are left for the next
    compaction, and a kill at any point loses nothing.
    """
    from ..sweep.storage import open_sweep

    store = open_sweep(directory)
    before, after = store.compact()
    click.echo(f"{directory}: {before} cell files -> {after}")


COMMANDS = [status, compact]
