"""Claims: which sweep computes which cells of a directory (DIR/claims/<token>, storage.py
describes the layout), so that concurrent sweeps on one directory never compute a cell
twice, and a sweep that died leaves its cells free. A mixin of storage.Store: it uses the
store's file system (fs, root, local), its process (me) and its atomic writes (_replace,
_rm, _ls)."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time

from ..procs import process_start


class Claims:
    """The claims this process holds (``held``: token -> cell ids) and the others'."""

    held: dict


    def claim(self, ids: list[str], state: str = "running") -> tuple[str | None, list[str]]:
        """Take for this process those of ``ids`` no live sweep holds, as one claim saying
        ``state`` ("queued" or "running"): returns (its token, the ids taken), (None, [])
        if none could be taken.

        On local disks, claims are read and written under a lock, so that no two sweeps
        take one cell; elsewhere the claim is written, then the others read, and any
        overlap dropped (both sweeps may drop a cell then: it stays for a rerun).
        Claims of dead processes on this host are stale: deleted and their cells free."""
        token = secrets.token_hex(8)
        with self._lock("claims"):
            held = self._claimed_elsewhere(token)
            taken = [i for i in ids if i not in held]
            if taken:
                self._write_claim(token, taken, state)
        if taken and not self.local:
            held = self._claimed_elsewhere(token)
            taken = [i for i in taken if i not in held]
            if taken:
                self._write_claim(token, taken, state)
            else:
                self.release(token)
        return (token, taken) if taken else (None, [])

    def _claimed_elsewhere(self, token: str) -> set[str]:
        """Ids held by live claims other than ``token`` (this process's own included)."""
        held = {i for other, ids in self.held.items() if other != token for i in ids}
        for other, info in self.claims().items():
            if other == token or other in self.held:
                continue
            if self.stale(info):
                self._rm(f"{self.root}/claims/{other}")
            else:
                held.update(info.get("ids", ()))
        return held

    def _write_claim(self, token: str, ids: list[str], state: str) -> None:
        self.held[token] = list(ids)
        payload = json.dumps({**self.me, "time": time.time(), "state": state,
                              "ids": list(ids)}).encode()
        self._replace(f"{self.root}/claims/{token}", lambda f: f.write(payload))

    def narrow(self, token: str, ids: list[str]) -> None:
        """Keep only ``ids`` in a claim this process holds (release it if none)."""
        if not ids:
            self.release(token)
        elif token in self.held:
            info = self.read_claim(token) or {}
            self._write_claim(token, ids, info.get("state", "running"))

    def mark(self, token: str, state: str) -> None:
        """Change the state of a claim this process holds (atomically: readers see the old
        claim or the new one)."""
        if token in self.held:
            self._write_claim(token, self.held[token], state)

    def release(self, token: str) -> None:
        """Remove a claim this process holds: its file first, then the token, so that a
        Ctrl-C between the two leaves the token to release_all (removing it is idempotent)."""
        if token in self.held:
            self._rm(f"{self.root}/claims/{token}")
            del self.held[token]

    def release_all(self) -> None:
        for token in list(self.held):
            self.release(token)

    def read_claim(self, token: str, retry: bool = True) -> dict | None:
        """The claim's content; None if there is none; {} if unreadable (a crash between
        creating and filling it: re-read once after a pause, the writer may be mid-way)."""
        try:
            info = json.loads(self.fs.cat_file(f"{self.root}/claims/{token}") or b"null")
        except FileNotFoundError:
            return None
        except ValueError:
            info = None
        if isinstance(info, dict):
            return info
        if retry:
            time.sleep(0.2)
            return self.read_claim(token, retry=False)
        return {}

    def stale(self, info: dict) -> bool:
        """A claim (or writer) whose process is gone: same host, and its pid is dead or
        reused."""
        if "pid" not in info:  # unreadable (a crash while it was created)
            return True
        return info.get("host") == self.me["host"] and (
            process_start(info.get("pid", -1)) != info.get("pid_start"))

    def claims(self) -> dict[str, dict]:
        """Every claim: token -> content ({"ids": [...], "state": ..., "pid": ...})."""
        out = {}
        for path in self._ls("claims"):
            base = path.rsplit("/", 1)[-1]
            if not base.startswith("."):
                info = self.read_claim(base) or {}
                out[base] = {**info, "ids": info.get("ids", [base])}  # first layout: per cell
        return out

    @contextlib.contextmanager
    def _lock(self, name: str, wait: bool = True):
        """An exclusive lock DIR/claims/.<name>.lock on local disks (yields whether it was
        taken: without ``wait``, False when another process holds it); elsewhere none."""
        if not self.local:
            yield True
            return
        import fcntl

        os.makedirs(f"{self.root}/claims", exist_ok=True)  # results copied without it
        with open(f"{self.root}/claims/.{name}.lock", "a") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)
