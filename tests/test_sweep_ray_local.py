"""A local Ray started by a sweep is one machine's: every port its processes listen on is on
the loopback (none on 0.0.0.0 or ::), and its dashboard is off."""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys

import pytest

from builders.sweep_folders import subprocess_env

pytest.importorskip("ray") if not os.environ.get("CI") else None

LISTENERS = r"""
import json, os, psutil, ray
from lexsem.sweep.executors.ray import connect
assert connect(None)
try:
    me = psutil.Process()
    pids = {me.pid} | {p.pid for p in me.children(recursive=True)}  # gcs, raylet, workers
    found = [(c.laddr.ip, c.laddr.port) for c in psutil.net_connections(kind="inet")
             if c.pid in pids and c.status == psutil.CONN_LISTEN]
    print(json.dumps({"listen": found, "dashboard": ray.get_runtime_context().gcs_address}))
finally:
    ray.shutdown()
"""


def _loopback(ip: str) -> bool:
    addr = ipaddress.ip_address(ip)
    mapped = getattr(addr, "ipv4_mapped", None)
    return addr.is_loopback or (mapped is not None and mapped.is_loopback)


def test_a_local_ray_listens_on_the_loopback_only() -> None:
    env = subprocess_env()
    env.pop("RAY_ADDRESS", None)
    done = subprocess.run(
        [sys.executable, "-c", LISTENERS], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads(done.stdout.strip().splitlines()[-1])
    assert doc["listen"], "no Ray port found: the check would pass without looking"
    wide = [(ip, port) for ip, port in doc["listen"] if not _loopback(ip)]
    assert not wide, f"Ray listens beyond the loopback: {wide}"
    assert doc["dashboard"].startswith("127.0.0.1:")
