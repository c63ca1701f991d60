"""Home paths and credentials out of run.json: the user's home folder is written as `~`, a
URL's credentials as `***` (`lexsem.credentials`).

A run record names local paths (data and cache folders, image roots, a user's benchmark file
`scpp:/home/ann/my.json`, a local model folder in a spec or fingerprint). Before it is written,
each of them under the home folder is made home-relative (`~/data`), so run.json can be
shared without the user's name or layout of their home; `~` expands back (`Path.expanduser`,
as the CLI and `lexsem.paths` do), so the record still says where the data came from. Paths
elsewhere are kept as they are. Every string of the record (spec, name, fingerprint,
provenance, notices) is also written without the credentials of any URL in it
(`user:KEY@host`, `?api_key=KEY`), so no key reaches a run folder.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from lexsem.credentials import redacted
from lexsem.results.schema import RunRecord

# a path starts a string or follows a separator of a spec or option list ("scpp:/...")
_BEFORE = r"(?<![^\s:=,;(\"'])"
_AFTER = r"(?=[/\\]|$|[\s?&#,;)\"'])"


def _homes() -> list[str]:
    home = os.path.expanduser("~")
    found = {home, str(Path(home).resolve())} if home not in ("", "~") else set()
    return sorted((h.rstrip("/\\") for h in found if len(h.rstrip("/\\")) > 1), key=len)[::-1]


def _pattern() -> re.Pattern[str] | None:
    homes = _homes()
    if not homes:
        return None
    return re.compile(_BEFORE + "(?:" + "|".join(re.escape(h) for h in homes) + ")" + _AFTER)


def _walk(value: Any, pattern: re.Pattern[str]) -> Any:
    if isinstance(value, str):
        return pattern.sub("~", value)
    if isinstance(value, dict):
        return {_walk(k, pattern): _walk(v, pattern) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_walk(v, pattern) for v in value]
    return value


def shareable_data(value: Any) -> Any:
    """`value` (strings, lists, dicts) as a run record writes it: paths under the user's home
    folder `~/...`, no URL credentials."""
    pattern = _pattern()
    return redacted(value if pattern is None else _walk(value, pattern))


def shareable(record: RunRecord) -> RunRecord:
    """`record` with every path under the user's home folder written `~/...` and no URL
    credentials."""
    raw = record.model_dump()
    walked = shareable_data(raw)
    return record if walked == raw else RunRecord.model_validate(walked)
