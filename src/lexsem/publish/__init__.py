"""`lexsem publish`: run folders from several people merged into one leaderboard, a static site
(HTML + JSON + one small script of its own; it opens from file://) and, optionally, the results
as a Hugging Face dataset folder (docs/publish.md). One file per idea: `facts.py` (what a run
says of its model: family, size, modality, dtype, the command that re-runs it), `collect.py`
(run folders read once: the manifest of the site and its cache), `merge.py` (the rows of
several runs, refused where they do not compare; `--replace`), `board.py` (a table per
benchmark, subset and metric, with intervals and rank groups), `published.py` (the papers'
rows beside the measured ones: a hook), `plot.py` (a critical-difference-style figure per
benchmark), `site.py` (the pages), `dataset.py` (the results as a dataset) and `publisher.py`
(all of it, written atomically)."""

from __future__ import annotations

from lexsem.publish.publisher import PublishResult, publish

__all__ = ["PublishResult", "publish"]
