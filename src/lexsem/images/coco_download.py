"""The COCO image download: fetch, verify, extract safely, install atomically.

`download_coco` / `download_archive` reuse the fetch machinery of `lexsem.download` (retries
with backoff, HTTP Range resume, atomic placement under a file lock), verify the archive's md5
and/or sha256 when known, extract into a temporary folder beside the target — refusing any
member that would land outside it (zip-slip) — and rename the folder into place in one step, so
a folder that exists is complete. It lands under the image base (`lexsem.images.locations`),
where `ImageStore` looks by default.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

import lexsem.download as dl
import lexsem.paths as paths
from lexsem.atomic import fsync_dir
from lexsem.download import SourceFile
from lexsem.errors import DownloadError
from lexsem.images.locations import COCO_TRAIN_ENV, COCO_VAL_ENV, image_base
from lexsem.images.refs import unsafe_reason

__all__ = [
    "IMAGE_ARCHIVES",
    "ImageArchive",
    "ImageDownload",
    "download_archive",
    "download_coco",
]

_CHUNK = 1 << 20


@dataclass(frozen=True)
class ImageArchive:
    """A zip of images that `lexsem download <name>` installs under the image base."""

    name: str  # the download name, e.g. "coco-val2017"
    url: str
    folder: str  # where it is installed, relative to the image base, e.g. "coco/val2017"
    member_root: str  # the top folder inside the zip, e.g. "val2017"
    md5: str | None = None
    sha256: str | None = None
    n_files: int | None = None  # expected number of files under member_root
    description: str = ""


def _coco(split: str, md5: str, n_files: int, description: str) -> ImageArchive:
    """The official zip of one COCO 2017 split (its images under ``<split>/`` in the zip)."""
    return ImageArchive(
        name=f"coco-{split}",
        url=f"http://images.cocodataset.org/zips/{split}.zip",
        folder=f"coco/{split}",
        member_root=split,
        md5=md5,
        n_files=n_files,
        description=description,
    )


# split -> (md5, files, description) of its zip
_COCO_ZIPS = {
    "val2017": (
        "442b8da7639aecaf257c1dceb8ba8c80",
        5000,
        "COCO 2017 validation images (5,000 JPEGs, ~778 MiB zip)",
    ),
    "train2017": (
        "cced6f7f71b7629ddf16f17bbcfab6b2",
        118287,
        "COCO 2017 train images (118,287 JPEGs, ~18 GiB zip)",
    ),
}

#: The archives `download_archive` knows. The md5 values are those that dataset tools
#: (torchvision-style loaders, mmdetection, R torch, ...) have checked the official zips
#: against for years; cocodataset.org itself publishes no checksum, and no sha256 is pinned —
#: the sha256 of each verified download is reported so that it can be recorded.
IMAGE_ARCHIVES: dict[str, ImageArchive] = {
    f"coco-{split}": _coco(split, *zip_facts) for split, zip_facts in _COCO_ZIPS.items()
}


@dataclass(frozen=True)
class ImageDownload:
    """What `download_archive` did: the installed folder and, when it fetched or verified an
    archive now, its digests."""

    name: str
    folder: Path
    n_files: int
    fresh: bool  # False: the folder was already installed, nothing was done
    sha256: str | None = None
    md5: str | None = None


def _digests(path: Path) -> tuple[str, str]:
    sha, md5 = hashlib.sha256(), hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            sha.update(chunk)
            md5.update(chunk)
    return sha.hexdigest(), md5.hexdigest()


def _verify(path: Path, archive: ImageArchive) -> tuple[bool, str, str, str]:
    """(ok, sha256, md5, what failed) for the archive file at `path`."""
    sha, md5 = _digests(path)
    if archive.sha256 and sha != archive.sha256.lower():
        return False, sha, md5, f"expected sha256 {archive.sha256}, got {sha}"
    if archive.md5 and md5 != archive.md5.lower():
        return False, sha, md5, f"expected md5 {archive.md5}, got {md5}"
    return True, sha, md5, ""


def _strip_offline_hint(message: str) -> str:
    # `download.fetch_part` appends a hint about --data-dir, which is about benchmark files.
    return message.split("; offline?", 1)[0]


def _fetch_archive(
    archive: ImageArchive, zip_path: Path, *, retries: int, timeout: float, backoff: float
) -> tuple[str, str]:
    """Download `archive` to `zip_path` (resumable, verified, atomic); returns (sha256, md5)."""
    source = SourceFile(name=zip_path.name, url=archive.url, sha256=archive.sha256 or "")
    part = dl.part_path(zip_path)

    def fetch() -> None:
        try:
            dl.fetch_part(source, part, retries=retries, timeout=timeout, backoff=backoff)
        except DownloadError as exc:
            raise DownloadError(
                f"{_strip_offline_hint(str(exc))}; offline? download {archive.url} elsewhere "
                f"and pass the zip with `lexsem download {archive.name} --from-zip FILE`, or "
                f"point lexsem at an extracted folder ({COCO_VAL_ENV} / {COCO_TRAIN_ENV})"
            ) from None

    resumed = part.exists()
    fetch()
    ok, sha, md5, why = _verify(part, archive)
    if not ok and resumed:  # the partial file may be from another version: start over once
        dl.remove_if_present(part)
        fetch()
        ok, sha, md5, why = _verify(part, archive)
    if not ok:
        dl.remove_if_present(part)
        raise DownloadError(f"checksum mismatch for {archive.url}: {why}; nothing was saved")
    os.replace(part, zip_path)
    return sha, md5


def _member_problem(info: zipfile.ZipInfo) -> str | None:
    name = info.filename
    mode = info.external_attr >> 16
    if mode and stat.S_ISLNK(mode):
        return "is a symbolic link"
    why = unsafe_reason(name.rstrip("/\\") or name)
    return None if why is None else why.replace("the path", "its path")


def _extract(zip_path: Path, archive: ImageArchive, dest: Path) -> int:
    """Extract `archive.member_root/` of `zip_path` to `dest` (which must not exist) atomically.

    Every member is checked before anything is written; one that would land outside the target
    (absolute, ``..``, a symlink) refuses the whole archive.
    """
    prefix = archive.member_root.strip("/") + "/"
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.extract-", dir=dest.parent))
    try:
        real_tmp = Path(os.path.realpath(tmp))
        try:
            zf = zipfile.ZipFile(zip_path)
        except (zipfile.BadZipFile, OSError) as exc:
            raise DownloadError(f"{zip_path} is not a readable zip archive: {exc}") from None
        with zf:
            infos = zf.infolist()
            for info in infos:
                problem = _member_problem(info)
                target = Path(os.path.realpath(tmp / info.filename))
                if problem is None and not target.is_relative_to(real_tmp):
                    problem = "would be written outside the target folder"
                if problem is not None:
                    raise DownloadError(
                        f"refusing the archive {zip_path}: member {info.filename!r} {problem} "
                        "(zip-slip); nothing was extracted"
                    )
            n = 0
            for info in infos:
                if not info.filename.replace("\\", "/").startswith(prefix):
                    continue  # e.g. __MACOSX/ entries: not part of the image folder
                target = tmp / info.filename
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                try:
                    with zf.open(info) as src, open(target, "wb") as out:
                        shutil.copyfileobj(src, out, _CHUNK)
                except (zipfile.BadZipFile, EOFError, zipfile.LargeZipFile) as exc:
                    raise DownloadError(
                        f"{zip_path}: member {info.filename!r} is damaged: {exc}"
                    ) from None
                n += 1
        extracted = tmp / archive.member_root.strip("/")
        if not extracted.is_dir():
            raise DownloadError(
                f"{zip_path} has no folder {prefix!r}; is it the {archive.name} archive?"
            )
        if archive.n_files is not None and n != archive.n_files:
            raise DownloadError(
                f"{zip_path} holds {n} files under {prefix!r}, expected {archive.n_files}"
            )
        os.rename(extracted, dest)  # one step: a folder at `dest` is always complete
        fsync_dir(dest.parent)
        return n
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _count_files(folder: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(folder))


def download_archive(
    archive: ImageArchive,
    *,
    image_root: str | Path | None = None,
    cache_root: str | Path | None = None,
    archive_file: str | Path | None = None,
    offline: bool | None = None,
    keep_archive: bool = False,
    retries: int = 4,
    timeout: float = 60.0,
    backoff: float = 0.5,
) -> ImageDownload:
    """Install `archive` at ``<image base>/<archive.folder>`` (see `image_base`).

    A folder already there is returned as is (it only ever appears complete). Otherwise the
    zip is downloaded to ``<image base>/<folder>.zip`` (resumable; or `archive_file`, a zip
    the user already has, is used), verified against the known md5/sha256, extracted to a
    temporary folder beside the target with every member checked (zip-slip is refused) and
    renamed into place. The downloaded zip is deleted afterwards unless `keep_archive`.
    A lock on ``<folder>.lock`` serialises concurrent installs.
    """
    base = image_base(image_root, cache_root)
    dest = base / archive.folder
    if dest.is_dir():
        return ImageDownload(archive.name, dest, _count_files(dest), fresh=False)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{dest}.lock"):
        if dest.is_dir():
            return ImageDownload(archive.name, dest, _count_files(dest), fresh=False)
        zip_path = dest.with_name(dest.name + ".zip")
        if archive_file is not None:
            zip_path = Path(archive_file).expanduser()
            if not zip_path.is_file():
                raise DownloadError(f"{zip_path} does not exist")
            ok, sha, md5, why = _verify(zip_path, archive)
            if not ok:
                raise DownloadError(f"{zip_path} is not the {archive.name} archive: {why}")
        else:
            known = archive.md5 or archive.sha256
            reuse = bool(known) and zip_path.is_file()
            ok, sha, md5 = False, "", ""
            if reuse:  # kept by an earlier run whose extraction failed
                ok, sha, md5, _ = _verify(zip_path, archive)
                if not ok:
                    dl.remove_if_present(zip_path)
            if not ok:
                is_offline = paths.offline() if offline is None else offline
                if is_offline:
                    raise DownloadError(
                        f"{archive.name} is not installed ({dest}) and lexsem is offline "
                        f"(LEXSEM_OFFLINE / HF_HUB_OFFLINE). Download {archive.url} on a "
                        f"connected machine and run `lexsem download {archive.name} --from-zip "
                        f"FILE`, or point lexsem at an extracted folder ({COCO_VAL_ENV} / "
                        f"{COCO_TRAIN_ENV}, or --coco-val2017 / --coco-train2017)"
                    )
                sha, md5 = _fetch_archive(
                    archive, zip_path, retries=retries, timeout=timeout, backoff=backoff
                )
        n = _extract(zip_path, archive, dest)
        if archive_file is None and not keep_archive:
            dl.remove_if_present(zip_path)
        return ImageDownload(archive.name, dest, n, fresh=True, sha256=sha, md5=md5)


def download_coco(
    split: str = "val2017",
    cache_root: str | Path | None = None,
    **kwargs: Any,
) -> ImageDownload:
    """Install the official COCO `split` images (``val2017`` or ``train2017``) where
    `ImageStore` looks for them by default; keyword arguments go to `download_archive`."""
    name = split if split.startswith("coco-") else f"coco-{split}"
    archive = IMAGE_ARCHIVES.get(name)
    if archive is None:
        known = ", ".join(sorted(a.removeprefix("coco-") for a in IMAGE_ARCHIVES))
        raise DownloadError(f"unknown COCO split {split!r}; known: {known}")
    return download_archive(archive, cache_root=cache_root, **kwargs)
