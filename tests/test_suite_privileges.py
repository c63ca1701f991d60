"""`builders.privileges`: a test of permission bits runs where they bind, as root too, and its
outcome is the child's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from builders.privileges import (
    effective_caps,
    permission_bits_apply,
    rerun_where_permission_bits_apply,
    where_permission_bits_apply,
)


def test_capabilities_are_read_from_the_status_file() -> None:
    assert effective_caps("Name:\tx\nCapEff:\t000001fffeffffff\n") == 0x1FFFEFFFFFF
    assert effective_caps("Name:\tx\n") == 0


@where_permission_bits_apply
def test_an_unreadable_file_is_unreadable_here(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("x")
    secret.chmod(0o200)
    try:
        assert permission_bits_apply()
        assert not os.access(secret, os.R_OK)
        with pytest.raises(PermissionError):
            secret.read_text()
    finally:
        secret.chmod(0o600)


def test_a_rerun_passes_skips_or_fails_as_the_child_did(tmp_path: Path) -> None:
    if permission_bits_apply():
        pytest.skip("permission bits bind this process: a test runs as it is")
    tests = tmp_path / "test_child.py"
    tests.write_text(
        "import os, pytest\n"
        "def test_root_power(tmp_path):\n"
        "    f = tmp_path / 'f'; f.write_text('x'); f.chmod(0)\n"
        "    assert os.access(f, os.R_OK)\n"
        "def test_skips():\n    pytest.skip('no folder here')\n"
        "def test_passes():\n    assert True\n",
        encoding="utf-8",
    )
    rerun_where_permission_bits_apply(f"{tests}::test_passes")
    with pytest.raises(pytest.skip.Exception, match="no folder here"):
        rerun_where_permission_bits_apply(f"{tests}::test_skips")
    with pytest.raises(pytest.fail.Exception, match="test_root_power"):
        rerun_where_permission_bits_apply(f"{tests}::test_root_power")
