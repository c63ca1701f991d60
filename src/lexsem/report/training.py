"""The training section of `lexsem report RUN --html` for a training run's folder (the
folder `lexsem train -o` wrote; its `train.json`): the loss and learning-rate curves of the
optimizer steps, the accuracy of each evaluation (before training, after each epoch) and the
validations, as tables and figures. A training run with no evaluation gets a page of this
section alone."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lexsem.errors import DataError
from lexsem.jsonl import read_json
from lexsem.report.html import Section, render_html
from lexsem.report.tables import Table

__all__ = ["is_training_run", "read_training_record", "training_page", "training_sections"]


def is_training_run(path: str | Path) -> bool:
    """Whether `path` is a training run's folder (it holds `train.json`)."""
    return (Path(path) / "train.json").is_file()


def read_training_record(folder: str | Path) -> dict[str, Any]:
    """`train.json` of the training run in `folder`; a `DataError` naming it when damaged."""
    path = Path(folder) / "train.json"
    record = read_json(path, what="a readable training record")
    if not isinstance(record, dict) or not isinstance(record.get("progress"), dict):
        raise DataError(f"{path}: not a training record (no progress)")
    return record


def training_sections(folders: Sequence[str | Path]) -> list[Section]:
    """One section per training run: its curves, evaluations and validations."""
    return [_section(Path(f), read_training_record(f)) for f in folders]


def training_page(folders: Sequence[str | Path], title: str) -> str:
    """A page of the training sections alone (runs with no evaluation to tabulate)."""
    return render_html(title, training_sections(folders))


def _section(folder: Path, record: Mapping[str, Any]) -> Section:
    progress = record["progress"]
    losses = [r for r in progress.get("losses", []) if isinstance(r, dict)]
    evaluations = progress.get("evaluations", [])
    validations = progress.get("validations", [])
    config = record.get("config", {})
    state = "finished" if record.get("finished") else "not finished (resume with --resume)"
    lines = [
        f"- model: {config.get('model')}, regime {config.get('regime')}, {config.get('epochs')} "
        f"epochs, batch {config.get('batch_size')}, peak learning rate {config.get('lr')}",
        f"- {len(losses)} optimizer steps, {state}",
    ]
    best = progress.get("best") or record.get("best")
    if best:
        lines.append(f"- selected: {best.get('label')} ({best.get('key')} {best.get('accuracy')})")
    sec = Section(title=f"Training: {folder.name}", text="\n".join(lines))
    if evaluations:
        sec.tables.append(_evaluation_table(evaluations))
    if validations:
        sec.tables.append(_validation_table(validations))
    if _plots_available():
        if losses:
            sec.figures.append(
                (
                    f"{folder.name}: training loss (left) and learning rate (right) per "
                    "optimizer step; dotted lines mark the ends of epochs.",
                    curves_png(losses),
                )
            )
        if evaluations or validations:
            sec.figures.append(
                (
                    f"{folder.name}: accuracy (%) of each evaluation, before training and "
                    "after each epoch.",
                    accuracy_png(evaluations, validations),
                )
            )
    return sec


def _evaluation_table(evaluations: Sequence[Mapping[str, Any]]) -> Table:
    keys = list(dict.fromkeys(k for e in evaluations for k in e.get("accuracy", {})))
    rows = [
        [str(e.get("label")), str(e.get("step")),
         *(_pct(e.get("accuracy", {}).get(k)) for k in keys)]
        for e in evaluations
    ]  # fmt: skip
    return Table("Accuracy (%) of each evaluation", ["evaluation", "step", *keys], rows)


def _validation_table(validations: Sequence[Mapping[str, Any]]) -> Table:
    rows = [
        [str(v.get("label")), str(v.get("step")), _pct(100 * v.get("in_batch_acc", float("nan"))),
         f"{v.get('loss', float('nan')):.4f}"]
        for v in validations
    ]  # fmt: skip
    return Table(
        "In-batch accuracy (%) and loss on the validation split",
        ["epoch", "step", "in-batch accuracy", "loss"],
        rows,
    )


def _pct(value: Any) -> str:
    return "" if value is None else f"{float(value):.2f}"


def _plots_available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def curves_png(losses: Sequence[Mapping[str, Any]]) -> bytes:
    """The loss and the learning rate against the optimizer step, side by side."""
    from lexsem.report.plots import _figure, _png

    steps = [int(r["step"]) for r in losses]
    fig, axes = _figure(9.0, 3.0, 1, 2)
    loss_ax, lr_ax = axes[0]
    loss_ax.plot(steps, [float(r["loss"]) for r in losses], color="#1f77b4", linewidth=1.2)
    loss_ax.set(xlabel="optimizer step", ylabel="loss", title="Training loss")
    lr_ax.plot(steps, [float(r["lr"]) for r in losses], color="#d62728", linewidth=1.2)
    lr_ax.set(xlabel="optimizer step", ylabel="learning rate", title="Learning rate")
    lr_ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
    ends = [a["step"] for a, b in itertools.pairwise(losses) if a["epoch"] != b["epoch"]]
    for ax in (loss_ax, lr_ax):
        for step in ends:
            ax.axvline(step, color="#999", linestyle=":", linewidth=0.8)
    return _png(fig)


def accuracy_png(
    evaluations: Sequence[Mapping[str, Any]], validations: Sequence[Mapping[str, Any]]
) -> bytes:
    """Each benchmark metric's accuracy (and the validation's in-batch accuracy) per
    evaluation, in order."""
    from lexsem.report.plots import _figure, _png

    fig, axes = _figure(6.5, 3.2)
    ax = axes[0][0]
    labels = list(dict.fromkeys([*(str(e["label"]) for e in evaluations),
                                 *(str(v["label"]) for v in validations)]))  # fmt: skip
    x = {label: i for i, label in enumerate(labels)}
    keys = list(dict.fromkeys(k for e in evaluations for k in e.get("accuracy", {})))
    for key in keys:
        pts = [(x[str(e["label"])], e["accuracy"][key]) for e in evaluations
               if key in e.get("accuracy", {})]  # fmt: skip
        ax.plot(*zip(*pts, strict=True), marker="o", linewidth=1.2, label=key)
    if validations:
        pts = [(x[str(v["label"])], 100 * v["in_batch_acc"]) for v in validations]
        ax.plot(*zip(*pts, strict=True), marker="s", linestyle="--", label="validation in-batch")
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    ax.set(ylabel="accuracy (%)", title="Accuracy per evaluation")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _png(fig)
