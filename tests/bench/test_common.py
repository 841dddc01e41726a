"""bench/common.py's A/B helpers (bench_steps.py and bench_ml.py --against): the versions'
lines and the extracted copy of a commit's package, which must hold it while in use and
leave nothing behind."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import common

pytestmark = pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs the git checkout")


def test_versions_name_the_commit_and_refuse_an_unknown_ref():
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()
    sha, who = common.versions(ROOT, "HEAD")
    assert sha == head
    assert who["B"] == f"HEAD = {head[:12]}" and str(ROOT) in who["A"]
    with pytest.raises(SystemExit, match="no-such-ref: not a commit"):
        common.versions(ROOT, "no-such-ref")


def test_materialised_holds_the_package_and_removes_it(tmp_path, monkeypatch):
    monkeypatch.setattr(common.tempfile, "gettempdir", lambda: str(tmp_path))  # not a bench's
    sha, _ = common.versions(ROOT, "HEAD")
    with common.materialised(ROOT, sha) as root:
        init = root / "fastgt" / "__init__.py"
        want = subprocess.run(["git", "-C", str(ROOT), "show", f"{sha}:fastgt/__init__.py"],
                              check=True, capture_output=True, text=True).stdout
        assert init.read_text() == want
        with common.materialised(ROOT, sha) as again:  # a second user shares the copy
            assert again == root
        assert root.exists()  # the first user still holds it
    assert root.parent == tmp_path and not root.exists()
