"""The rows of a Hugging Face dataset: local parquet files (read with pyarrow only) or a
`datasets.Dataset` (read through its Arrow storage, Image columns kept as encoded bytes).

Both pickle and work in another process (a DataLoader worker started with `spawn`): a copy of
`ParquetRows` records the files with their size and mtime and re-opens them on first use (a
file changed since is an error); a `datasets.Dataset` pickles its memory-mapped Arrow cache
files by path.

`find_parquet_files` finds a split's files in a snapshot folder: the repository snapshot
(`hf download --repo-type dataset REPO --local-dir DIR` gives `DIR/data/test-000xx-of-000nn`
`.parquet`) or the Hub's parquet export (`DIR/default/test/0000.parquet`). Files whose name
starts with `<split>-`, whose stem is `<split>` or that sit under a `<split>/` folder are used;
when none match, every parquet file in the folder is (a folder holding one split only).
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from lexsem.errors import DataError


def _stamp(path: Path, key: str) -> tuple[int, int]:
    """(size, mtime_ns) of `path`: a re-opened file must be the one that was loaded."""
    try:
        st = path.stat()
    except OSError as exc:
        raise DataError(
            f"{key}: cannot read the parquet file ({exc.strerror or exc})", file=path
        ) from exc
    return st.st_size, st.st_mtime_ns


class RowSource:
    """The rows of a dataset, read column by column."""

    label: str  # names the data in errors: a file path or "hf:<repo>[<split>]"
    columns: list[str]

    def check_columns(self, columns: Sequence[str]) -> None:
        """DataError naming the first row when a column is missing."""
        raise NotImplementedError

    def rows(self, columns: Sequence[str]) -> Iterator[tuple[int, dict[str, Any]]]:
        raise NotImplementedError

    def cell(self, row: int, column: str) -> Any:
        raise NotImplementedError

    def image_folders(self, row: int) -> tuple[list[Path], Path] | None:
        """(folders a relative image path of this row is looked up in, in order; the root folder
        it must stay inside), or None when this source reads no image paths."""
        return None


class ParquetRows(RowSource):
    """Local parquet files, read with pyarrow. Picklable: a copy records the files (and their
    size and mtime) and re-opens them on first use, in whichever process it lands.

    `root`: the dataset's folder (the snapshot); image paths stored in the files are read only
    inside it (default: the folder of the first file)."""

    def __init__(self, files: Sequence[Path], key: str, root: Path | None = None) -> None:
        self.key = key
        self.files = list(files)
        self.root = root if root is not None else self.files[0].parent
        self.label = str(self.files[0].parent) if len(self.files) > 1 else str(self.files[0])
        self._pf: list[Any] | None = None
        self._stamps = [_stamp(f, key) for f in self.files]
        self._file_start: list[int] = []  # first global row of each file
        self._rg_start: list[list[int]] = []  # first local row of each row group, per file
        total = 0
        for pf in self._open():
            self._file_start.append(total)
            starts, n = [], 0
            for i in range(pf.metadata.num_row_groups):
                starts.append(n)
                n += pf.metadata.row_group(i).num_rows
            self._rg_start.append(starts)
            total += n
        self.num_rows = total
        self.columns = list(self._open()[0].schema_arrow.names)
        self._cache: dict[str, tuple[tuple[int, int], Any]] = {}

    def __getstate__(self) -> dict[str, Any]:
        state = {**self.__dict__, "_pf": None, "_cache": {}}
        state.pop("_lock", None)
        return state

    def _read_lock(self) -> threading.Lock:
        """One lock per source: a `ParquetFile` is not safe to read from several threads at
        once (image decoding workers ask for cells concurrently)."""
        lock = self.__dict__.get("_lock")
        return lock if lock is not None else self.__dict__.setdefault("_lock", threading.Lock())

    def _open(self) -> list[Any]:
        """The open `ParquetFile`s (opened on first use; files changed since are an error)."""
        if self._pf is None:
            import pyarrow.parquet as pq

            opened = []
            for f, stamp in zip(self.files, self._stamps, strict=True):
                if _stamp(f, self.key) != stamp:
                    raise DataError(
                        f"{self.key}: the parquet file changed since it was loaded", file=f
                    )
                try:
                    opened.append(pq.ParquetFile(f))
                except Exception as exc:
                    raise DataError(
                        f"{self.key}: not a readable parquet file ({exc})", file=f
                    ) from exc
            self._pf = opened
        return self._pf

    def check_columns(self, columns: Sequence[str]) -> None:
        for i, pf in enumerate(self._open()):
            have = set(pf.schema_arrow.names)
            missing = [c for c in columns if c not in have]
            if missing:
                raise DataError(
                    f"{self.key}: {missing_fields(missing)} (columns: {sorted(have)})",
                    file=self.files[i],
                    item=f"row {self._file_start[i]}",
                )

    def rows(self, columns: Sequence[str]) -> Iterator[tuple[int, dict[str, Any]]]:
        self.check_columns(columns)
        for i, pf in enumerate(self._open()):
            row = self._file_start[i]
            for batch in pf.iter_batches(batch_size=1024, columns=list(columns)):
                for rec in batch.to_pylist():
                    yield row, rec
                    row += 1

    def locate(self, row: int) -> tuple[int, int, int]:
        """Global row -> (file index, row group, row within the group)."""
        if not 0 <= row < self.num_rows:
            raise DataError(f"{self.key}: no row {row} ({self.num_rows} rows)", file=self.label)
        fi = bisect.bisect_right(self._file_start, row) - 1
        local = row - self._file_start[fi]
        rg = bisect.bisect_right(self._rg_start[fi], local) - 1
        return fi, rg, local - self._rg_start[fi][rg]

    def cell(self, row: int, column: str) -> Any:
        fi, rg, k = self.locate(row)
        with self._read_lock():
            cached = self._cache.get(column)
            if cached is None or cached[0] != (fi, rg):
                self.check_columns([column])
                arr = self._open()[fi].read_row_group(rg, columns=[column]).column(0)
                cached = ((fi, rg), arr)
                self._cache[column] = cached  # one row group per column: sequential reads
        return cached[1][k].as_py()

    def image_folders(self, row: int) -> tuple[list[Path], Path] | None:
        folder = self.files[self.locate(row)[0]].parent
        return list(dict.fromkeys([folder, self.root])), self.root


def missing_fields(names: Sequence[str]) -> str:
    """`missing field 'a'` / `missing fields 'a', 'b'`: every missing column in one error."""
    return f"missing field{'s' if len(names) > 1 else ''} {', '.join(map(repr, names))}"


class DatasetRows(RowSource):
    """A `datasets.Dataset` read through its Arrow storage (Image columns stay encoded bytes)."""

    def __init__(self, ds: Any, key: str, label: str) -> None:
        self.ds = ds
        self.key = key
        self.label = label
        self.columns = list(ds.column_names)
        self.num_rows = len(ds)
        self._by_col: dict[str, Any] = {}

    def __getstate__(self) -> dict[str, Any]:
        # a `datasets.Dataset` pickles its memory-mapped Arrow cache files by path (an
        # in-memory one by value); the column views are rebuilt on use
        return {**self.__dict__, "_by_col": {}}

    def check_columns(self, columns: Sequence[str]) -> None:
        missing = [c for c in columns if c not in self.columns]
        if missing:
            raise DataError(
                f"{self.key}: {missing_fields(missing)} (columns: {sorted(self.columns)})",
                file=self.label,
                item="row 0",
            )

    def rows(self, columns: Sequence[str]) -> Iterator[tuple[int, dict[str, Any]]]:
        self.check_columns(columns)
        view = self.ds.select_columns(list(columns)).with_format("arrow")
        row = 0
        for start in range(0, self.num_rows, 1024):
            for rec in view[start : start + 1024].to_pylist():
                yield row, rec
                row += 1

    def cell(self, row: int, column: str) -> Any:
        self.check_columns([column])
        view = self._by_col.get(column)
        if view is None:
            view = self._by_col[column] = self.ds.select_columns([column]).with_format("arrow")
        return view[row].column(0)[0].as_py()


def find_parquet_files(data_dir: str | Path, split: str, *, key: str = "") -> list[Path]:
    """The parquet files of `split` under `data_dir` (a folder, or one .parquet file), sorted."""
    root = Path(data_dir).expanduser()
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise DataError(f"{key}: data folder does not exist", file=root)
    found = sorted(root.rglob("*.parquet"), key=lambda p: p.relative_to(root).as_posix())
    if not found:
        raise DataError(f"{key}: no .parquet files in the data folder", file=root)

    def is_split(p: Path) -> bool:
        rel = p.relative_to(root)
        return p.name.startswith(f"{split}-") or p.stem == split or split in rel.parts[:-1]

    return [p for p in found if is_split(p)] or found
