"""The reference repositories' own files, for the tests that read or run them as oracles.

A checkout (a clone, or a bare mirror) of each repository is looked up in the folder
`$LEXSEM_REFERENCES` (default: `.references` in this repository, ignored by git) as
`OWNER+NAME` (or `OWNER+NAME/repo`), e.g. `.references/RAIVNLab+sugar-crepe`; files are read at
its `HEAD` with `git show`, so a bare mirror serves as well as a working tree. Without one, a
test of the reference's own code skips, in CI too: each has a twin that checks the same
procedure re-implemented in the test from the reference's source, which always runs
(docs/testing.md, "The references' own code").
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

SUGARCREPE = "RAIVNLab/sugar-crepe"
BIVLC = "IMirandaM/BiVLC"


def references_dir() -> Path:
    """The folder holding the reference checkouts."""
    return Path(os.environ.get("LEXSEM_REFERENCES") or REPO / ".references")


def checkout(repo: str) -> Path | None:
    """The checkout of `repo` ("OWNER/NAME") in `references_dir()`, or None."""
    base = references_dir() / repo.replace("/", "+")
    for folder in (base, base / "repo"):
        if (folder / ".git").exists() or (folder / "HEAD").is_file():
            return folder
    return None


def require_checkout(repo: str) -> Path:
    """The checkout of `repo`; skips the test (in CI too) when there is none."""
    folder = checkout(repo)
    if folder is None:
        where = references_dir() / repo.replace("/", "+")
        pytest.skip(f"no checkout of {repo} at {where} ($LEXSEM_REFERENCES; docs/testing.md)")
    return folder


def reference_file(repo: str, path: str) -> str:
    """The text of `path` at the HEAD of `repo`'s checkout; skips without a checkout."""
    folder = require_checkout(repo)
    return subprocess.run(
        ["git", "-C", str(folder), "show", f"HEAD:{path}"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
