"""The run record (run.json): a versioned, validated schema.

Bump SCHEMA_VERSION on any incompatible change; `load_run` refuses versions it does not know.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
)

SCHEMA_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# what a run in a dtype other than fp32 says of its hits (run.json `model.dtype_note`)
REDUCED_PRECISION = ("bf16", "fp16")
REDUCED_PRECISION_NOTE = (
    "{dtype}: hits may differ from an fp32 run of the same model and data "
    "(lexsem compare of the two runs counts the items)"
)


class ModelInfo(_Model):
    spec: str
    name: str
    fingerprint: dict[str, Any]
    fingerprint_key: str
    device: str | None = None
    dtype: str | None = None
    batch_size: int
    # why `dtype` is what it is where the spec asked for dtype=auto (one line)
    dtype_reason: str | None = None
    # a run in bf16 or fp16: REDUCED_PRECISION_NOTE (fp32 runs, and older runs: absent)
    dtype_note: str | None = None

    @model_serializer(mode="wrap")
    def _without_absent_notes(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """`dtype_reason` and `dtype_note` only where the run has them: an fp32 run's record
        as it is without them."""
        out = handler(self)
        if isinstance(out, dict):
            for key in ("dtype_reason", "dtype_note"):
                if out.get(key, "") is None:
                    del out[key]
        return out


class FileInfo(_Model):
    subset: str
    file: str | None
    sha256: str


class DataNotice(_Model):
    """What the data is not (a partial snapshot, an empty subset left out, rows of an unknown
    type or incomplete rows left out), as warned when it was loaded."""

    kind: str  # "row_count", "empty_subset", "dropped_rows" or "unknown_rows"
    message: str
    subset: str | None = None
    ids: list[str] = Field(default_factory=list)  # the items or rows concerned, when any


class BenchmarkInfo(_Model):
    name: str
    subsets: list[str]
    items: dict[str, int]
    files: list[FileInfo]
    dropped: dict[str, list[str]] = Field(default_factory=dict)  # incomplete items left out
    skipped: dict[str, list[str]] = Field(default_factory=dict)  # items with a skipped image
    # "files" (pinned public files), "generated", "hf" or "user" (a user's file, no pinned hash)
    origin: str = "files"
    notices: list[DataNotice] = Field(default_factory=list)  # absent in older runs: none


class MetricResult(_Model):
    benchmark: str
    task: str
    metric: str
    subset: str  # a subset name, "_micro" or "_macro"
    n: int
    hits: int
    ties: int
    accuracy: float  # percent
    ci_low: float | None
    ci_high: float | None
    # what an extra aggregate (subset "_<name>") is, in words, for tables and the HTML report,
    # e.g. "VG-Relation: macro over relations, symmetric ones removed (paper preset)"
    label: str | None = None
    # coverage of the subset(s) this row stands for: items scored / items loaded (plus rows
    # left out as incomplete or of an unknown type). Below 100% when items were skipped; tables
    # then show `60.00 (5/245)`. None in runs recorded before: read as complete.
    items_scored: int | None = None
    items_total: int | None = None

    @property
    def complete(self) -> bool:
        """True unless some items of the row's subsets were not scored."""
        if self.items_scored is None or self.items_total is None:
            return True
        return self.items_scored >= self.items_total


class Config(_Model):
    tasks: list[str]
    # how multiple-choice answers were read ("authors" / "strict", `lexsem.tasks.answer_rules`);
    # None (and not written) in runs with no multiple-choice task
    answer_rule: str | None = None
    images: dict[str, Any] = Field(default_factory=dict)  # image roots, skip policy, EXIF
    tie_policy: str
    seed: int
    n_boot: int
    confidence: float
    # the full evaluation settings (`lexsem.config.EvalConfig`), as given
    evaluation: dict[str, Any] = Field(default_factory=dict)

    @model_serializer(mode="wrap")
    def _without_no_rule(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """`answer_rule` only where the run has one: other runs' records (and ids) as they
        are without it."""
        out = handler(self)
        if isinstance(out, dict) and out.get("answer_rule", "") is None:
            del out["answer_rule"]
        return out


class Breakdown(_Model):
    """Where a run's wall time went (`lexsem.clock`): exclusive parts on the run's thread, whose
    sum with `rest_s` is `wall_s`. The wall runs from the process's start (CLI runs: start-up
    included) or the run's start (`Evaluator.run`) to its results; writing the run folder is
    after it. `decode_workers_s` is work beside the wall: the seconds DataLoader workers spent
    reading, decoding and preprocessing images (summed over workers) while the run went on;
    the wall's share of decoding is `image_decode_s`, the time the run waited for batches."""

    wall_s: float
    start_up_s: float = 0.0  # process start to the run's start (imports; CLI runs only)
    model_load_s: float = 0.0  # the model's files checked and its weights loaded
    data_s: float = 0.0  # the benchmarks loaded
    image_read_s: float = 0.0  # image files read and hashed (main process)
    image_decode_s: float = 0.0  # waiting for decoded batches
    tokenize_s: float = 0.0
    text_tower_s: float = 0.0  # text model calls, less tokenizing and loading
    image_tower_s: float = 0.0  # image model calls
    store_s: float = 0.0  # the request stores: opening, lookups, writes
    scoring_s: float = 0.0  # hits, accuracies, bootstrap intervals
    rest_s: float = 0.0  # wall less the parts above
    decode_workers: int = 0  # DataLoader workers (0: decoding ran in the run's thread)
    decode_workers_s: float = 0.0  # their work, beside the wall (0 without workers)
    # of that work (or of the in-thread decoding): file reads, PIL decodes, preprocessing
    decode_read_s: float = 0.0
    decode_pil_s: float = 0.0
    decode_preprocess_s: float = 0.0

    PARTS: ClassVar[tuple[str, ...]] = (
        "start_up_s", "model_load_s", "data_s", "image_read_s", "image_decode_s", "tokenize_s",
        "text_tower_s", "image_tower_s", "store_s", "scoring_s", "rest_s",
    )  # fmt: skip

    def parts(self) -> dict[str, float]:
        """Each part of the wall (rest included), in seconds, in display order."""
        return {name.removesuffix("_s"): getattr(self, name) for name in self.PARTS}


class Timings(_Model):
    total_s: float
    load_data_s: float
    encode_s: float
    cache_s: float
    metrics_s: float
    n_texts_unique: int
    n_texts_cached: int
    n_texts_encoded: int
    image_s: float = 0.0  # reading, decoding and encoding/scoring images
    n_images_unique: int = 0
    n_images_cached: int = 0
    n_images_encoded: int = 0
    n_images_skipped: int = 0
    n_images_from_memory: int = 0  # decoded images an Evaluator kept from an earlier run
    # why images were skipped (--skip-bad-images): {"missing": 2, "too-large": 1, ...}
    image_skip_reasons: dict[str, int] = Field(default_factory=dict)
    n_pairs_unique: int = 0  # (image, text) pairs, for pair scorers
    n_pairs_cached: int = 0
    n_pairs_scored: int = 0
    # requests to a chat model (`lexsem.engine.chat`): distinct, served by the store (of them,
    # answers imported from a file), sent now, and HTTP attempts (retries included)
    n_requests: int = 0
    n_requests_stored: int = 0
    n_requests_imported: int = 0
    n_requests_sent: int = 0
    n_request_attempts: int = 0
    # where the wall time went (absent in older runs)
    breakdown: Breakdown | None = None

    @model_serializer(mode="wrap")
    def _without_no_breakdown(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """`breakdown` only where the run has one: older records as they were written."""
        out = handler(self)
        if isinstance(out, dict) and out.get("breakdown", "") is None:
            del out["breakdown"]
        return out


class RuleComparison(_Model):
    """One metric of a multiple-choice task on one subset read by the run's answer rule and
    by the other (`lexsem.tasks.answer_rules`), where the two rules differ: the hits of each
    and the items whose hit the two rules disagree on."""

    benchmark: str
    task: str
    metric: str
    subset: str
    n: int
    rule: str  # the run's ("authors" / "strict")
    hits: int
    other_rule: str
    other_hits: int
    disagree: int


class UnknownAnswer(_Model):
    """A recorded answer about an item the benchmark selection does not have."""

    where: str  # "line 3" / "record 3"
    subset: str
    item_id: str


class RecordedCoverage(_Model):
    """Recorded answers (`lexsem score-answers`) against the benchmark: per subset the items
    with an answer and the items loaded, and the answers about items it does not have."""

    file: str
    answers: int
    items_answered: dict[str, int]
    items_total: dict[str, int]
    unknown: list[UnknownAnswer] = Field(default_factory=list)


class RunRecord(_Model):
    schema_version: int = SCHEMA_VERSION
    lexsem_version: str
    run_id: str
    created_at: str
    model: ModelInfo
    benchmarks: list[BenchmarkInfo]
    config: Config
    results: list[MetricResult]
    timings: Timings
    environment: dict[str, str] = Field(default_factory=dict)
    # multiple choice read by both answer rules where they differ (absent in older runs: none)
    answer_rules: list[RuleComparison] = Field(default_factory=list)
    # a run of recorded answers: what the file covers (None for any other model)
    recorded: RecordedCoverage | None = None

    def result(
        self, benchmark: str, metric: str, subset: str, task: str | None = None
    ) -> MetricResult:
        """The result of one metric on one subset (or `_micro` / `_macro`). A benchmark run on a
        single subset has no aggregates: asking for `_micro` / `_macro` gives that subset."""
        found = [
            r
            for r in self.results
            if (r.benchmark, r.metric) == (benchmark, metric) and (task is None or r.task == task)
        ]
        for r in found:
            if r.subset == subset:
                return r
        plain = [r for r in found if not r.subset.startswith("_")]
        if subset in {"_micro", "_macro"} and len(plain) == 1:
            return plain[0]
        raise KeyError(f"no result for {benchmark}/{subset} {metric}")
