"""What one sweep did (``run_sweep``'s return value): cells by status, cells not computed
here and why, the errors of the failed and diverged cells grouped by message; the lines
``fastgt grid`` prints from it."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field


@dataclass
class SweepReport:
    """Counts of one ``run_sweep``: computed cells by status, and cells not computed here;
    the errors of the failed and diverged cells, grouped by message."""

    total: int = 0
    status: Counter = field(default_factory=Counter)
    skipped: int = 0  # finished before (or by a concurrent sweep)
    busy: int = 0  # claimed by another live sweep
    lost: int = 0  # in a task whose worker died: not recorded, a rerun computes them
    lost_reason: str = ""
    lost_ids: list = field(default_factory=list)  # the first few
    kept_failed: int = 0  # skipped, recorded as failed before
    others: int = 0  # cells of DIR not in this grid (other specs run there)
    older: int = 0  # cells of DIR of another fastgt's numbers (moved to DIR/older at the end)
    growing: list = field(default_factory=list)  # ok cells whose loss_nodes grew to the end
    #: data file -> skipped cells that ran on it before it was rewritten
    stale: dict = field(default_factory=dict)
    elapsed: float = 0.0
    #: (status, message with its numbers masked) -> [count, first message, first cell id]
    errors: dict = field(default_factory=dict)

    @property
    def failed(self) -> int:
        return self.status["failed"]

    def add(self, cell_id: str, row: dict) -> None:
        """Count a computed cell (and its error, if it failed or diverged)."""
        self.status[row["status"]] += 1
        if row.get("growing"):
            self.growing.append(cell_id)
        if row["status"] in ("failed", "diverged"):
            msg = row.get("error") or ""
            group = self.errors.setdefault((row["status"], _NUMBER.sub("#", msg)),
                                           [0, msg, cell_id])
            group[0] += 1

    def line(self) -> str:
        s = self.status
        computed = sum(s.values())
        rate = f", {computed / self.elapsed:.3g} cells/s" if computed and self.elapsed > 0 else ""
        lost = f", {self.lost} lost (their worker died)" if self.lost else ""
        return (f"{self.total} cells: {s['ok']} ok, {s['diverged']} diverged, {s['failed']} failed, "
                f"{self.skipped} skipped (done before), {self.busy} running elsewhere{lost} "
                f"[{self.elapsed:.1f} s{rate}]")

    def notes(self) -> list[str]:
        """Lines beside the counts: failed cells skipped, cells of other specs or of another
        fastgt's numbers, ok cells that ended growing, data files changed since."""
        out = []
        if self.kept_failed:
            out.append(f"  {self.kept_failed} of the skipped cells had failed: "
                       "--retry-failed computes them again")
        if self.others:
            out.append(f"  DIR also holds {self.others} cells of other grids (fastgt.load "
                       "reads them too: where= selects)")
        if self.older:
            out.append(f"  DIR held {self.older} cells computed by another fastgt, whose "
                       "numbers can differ (their numerics version): never loaded, moved to "
                       "DIR/older as the sweep compacts")
        if self.growing:
            out.append(f"  {len(self.growing)} of the ok cells ended while loss_nodes grew at "
                       "each of their last records (column growing: they may be diverging; "
                       f"e.g. cell {self.growing[0]})")
        for path, count in self.stale.items():
            out.append(f"  {count} of the skipped cells ran on {path} before its size or "
                       "modification time changed: --force computes them again")
        return out

    def failures(self, most: int = 10) -> list[str]:
        """One line per kind of error, most frequent first: count, status, a message, a cell."""
        groups = sorted(self.errors.items(), key=lambda kv: -kv[1][0])
        lines = [f"  {n} {status}: {msg} (e.g. cell {cell})"
                 for (status, _), (n, msg, cell) in groups[:most]]
        if len(groups) > most:
            rest = sum(n for _, (n, _, _) in groups[most:])
            lines.append(f"  ... {rest} more cells with {len(groups) - most} other messages")
        return lines


#: numbers in error messages (masked to group messages that differ only in them)
_NUMBER = re.compile(r"[-+]?\d+(\.\d*)?([eE][-+]?\d+)?")
