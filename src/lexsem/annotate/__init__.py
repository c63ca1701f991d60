"""`lexsem annotate`: human studies — the papers' human baselines and the human steps of
dataset construction — as a small web app, and what is made of their answers
(docs/human-studies.md).

A study is one SQLite file (`store.py`, the only module running SQL on it) made from a
benchmark selection or a build stage's output (`sources.py`, `queries.py`, `build_rows.py`,
`study.py`) with its settings (`config.py`), served by a FastAPI app (`app.py`,
`templates/`), assigned with overlap and quotas (`assign.py`), randomised per annotator
(`order.py`), watched (`study_progress.py`) and exported as one answers table (`answers.py`).
Its answers become a human run folder (`human_run.py`) or are folded into a build
(`fold_back.py`); it can be run in Label Studio instead (`labelstudio_export.py`, its exports
read back by `labelstudio_import.py`, through `labelstudio.py`)."""
