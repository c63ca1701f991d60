"""Pluggable constituency parsers for the syntactic-similarity analysis.

A parser turns texts into bracketed constituency trees, one string per text; a text with several
sentences gives several top-level trees in that string ("(ROOT ...) (ROOT ...)"), which
``tree_kernel.TreeKernel.document_similarity`` compares sentence by sentence as FastKASSIM does.
Adapters put every sentence tree under a ``ROOT`` node, the shape of the Stanford parser output
FastKASSIM was run with.

Real parsers are optional and imported only when used:

- ``corenlp``: a running Stanford CoreNLP server (plain HTTP, no extra Python package), by default
  with the English PCFG model FastKASSIM uses (``englishPCFG.ser.gz``) — the closest to the paper.
- ``stanza``: Stanford's neural parser (``pip install stanza`` + a one-off model download).
- ``benepar``: Berkeley Neural Parser on spaCy (``pip install benepar spacy`` + model downloads).

Parsing is slow: wrap a parser in ``CachingParser`` (each unique text parsed once, optionally
remembered on disk) or call ``parse_unique``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from lexsem.errors import LexsemError
from lexsem.jsonl import read_jsonl
from lexsem.paths import cache_dir, offline
from lexsem.registry import Registry, did_you_mean


class ParserUnavailableError(LexsemError):
    """A constituency parser is not installed, has no model, or cannot be reached."""


@runtime_checkable
class ConstituencyParser(Protocol):
    """Anything with a ``name`` and ``parse(texts) -> list of bracketed tree strings``."""

    name: str

    def parse(self, texts: Sequence[str]) -> list[str]:
        """One bracketed string per text (several top-level trees for several sentences)."""
        ...


def _root(tree: str, root: str = "ROOT") -> str:
    """Wrap a sentence tree under ``root`` unless it already has that label."""
    s = " ".join(tree.split())
    if s.startswith(f"({root} ") or s == f"({root})":
        return s
    # benepar's NLTK trees may come as (TOP ...): rename rather than nest
    if s.startswith("(TOP "):
        return f"({root} " + s[len("(TOP ") :]
    return f"({root} {s})"


# --------------------------------------------------------------------------------------------
# Adapters


_STANZA_HELP = (
    "The stanza parser needs the package and its English models:\n"
    "  pip install stanza\n"
    "  python -c \"import stanza; stanza.download('en', "
    "processors='tokenize,pos,constituency')\"\n"
    "(stanza keeps models in its resources folder, ~/.cache/stanza/... or\n"
    " $STANZA_RESOURCES_DIR; pass model_dir=... for another folder)"
)

_BENEPAR_HELP = (
    "The benepar parser needs benepar, spaCy and two models:\n"
    "  pip install benepar spacy\n"
    "  python -m spacy download en_core_web_md\n"
    "  python -c \"import benepar; benepar.download('benepar_en3')\""
)

_CORENLP_HELP = (
    "The corenlp parser needs a running Stanford CoreNLP server (Java 8+):\n"
    "  download and unzip https://stanfordnlp.github.io/CoreNLP/ (stanford-corenlp-4.x)\n"
    "  java -mx4g -cp 'stanford-corenlp-4.*/*' "
    "edu.stanford.nlp.pipeline.StanfordCoreNLPServer -port 9000\n"
    "then use get_parser('corenlp', url='http://localhost:9000')"
)


def _imported(name: str, missing: str) -> Any:
    """The top-level module `name`, imported (by the `import` statement's hook); a
    `ParserUnavailableError(missing)` where it is not installed."""
    try:
        return __import__(name)
    except ImportError as e:
        raise ParserUnavailableError(missing) from e


class StanzaParser:
    """Stanza's constituency parser (tokenize, pos, constituency). Never downloads by default."""

    def __init__(
        self,
        lang: str = "en",
        *,
        model_dir: str | os.PathLike[str] | None = None,
        package: str | None = None,
        use_gpu: bool | None = None,
        download: bool = False,
    ) -> None:
        self.lang = lang
        self.model_dir = str(model_dir) if model_dir is not None else None
        self.package = package
        self.use_gpu = use_gpu
        self.download = download
        self.name = f"stanza:{lang}" + (f":{package}" if package else "")
        self._nlp: Any = None

    def _pipeline(self) -> Any:
        if self._nlp is not None:
            return self._nlp
        stanza = _imported("stanza", f"stanza is not installed.\n{_STANZA_HELP}")
        kwargs: dict[str, Any] = {
            "lang": self.lang,
            "processors": "tokenize,pos,constituency",
            "verbose": False,
            "download_method": None,
        }
        if self.download and not offline():
            kwargs.pop("download_method")  # stanza's default: fetch what is missing
        if self.model_dir is not None:
            kwargs["dir"] = self.model_dir
        if self.package is not None:
            kwargs["package"] = self.package
        if self.use_gpu is not None:
            kwargs["use_gpu"] = self.use_gpu
        try:
            self._nlp = stanza.Pipeline(**kwargs)
        except (OSError, ValueError, KeyError) as e:  # missing resources.json / model files
            raise ParserUnavailableError(
                f"stanza could not load its English constituency models ({e}).\n{_STANZA_HELP}"
            ) from e
        return self._nlp

    def parse(self, texts: Sequence[str]) -> list[str]:
        nlp = self._pipeline()
        if not texts:
            return []
        docs = nlp.bulk_process(list(texts))
        return [" ".join(_root(str(s.constituency)) for s in doc.sentences) for doc in docs]


class BeneparParser:
    """Berkeley Neural Parser as a spaCy pipeline component."""

    def __init__(self, model: str = "benepar_en3", *, spacy_model: str = "en_core_web_md") -> None:
        self.model = model
        self.spacy_model = spacy_model
        self.name = f"benepar:{model}:{spacy_model}"
        self._nlp: Any = None

    def _pipeline(self) -> Any:
        if self._nlp is not None:
            return self._nlp
        missing = f"benepar and/or spaCy are not installed.\n{_BENEPAR_HELP}"
        _imported("benepar", missing)  # registers the spaCy component
        spacy = _imported("spacy", missing)
        try:
            nlp = spacy.load(self.spacy_model)
            if "benepar" not in nlp.pipe_names:
                nlp.add_pipe("benepar", config={"model": self.model})
        except (OSError, LookupError, ValueError) as e:
            raise ParserUnavailableError(
                f"benepar could not load its models ({e}).\n{_BENEPAR_HELP}"
            ) from e
        self._nlp = nlp
        return nlp

    def parse(self, texts: Sequence[str]) -> list[str]:
        nlp = self._pipeline()
        return [" ".join(_root(s._.parse_string) for s in doc.sents) for doc in nlp.pipe(texts)]


class CoreNLPParser:
    """A Stanford CoreNLP server (tokenize, ssplit, pos, parse) over HTTP.

    ``parse_model`` defaults to the English PCFG model of the Stanford parser, which FastKASSIM
    runs; ``None`` leaves the server's default. ``client`` (an ``httpx.Client``) is for tests.
    """

    PCFG = "edu/stanford/nlp/models/lexparser/englishPCFG.ser.gz"

    def __init__(
        self,
        url: str = "http://localhost:9000",
        *,
        parse_model: str | None = PCFG,
        timeout: float = 60.0,
        client: Any = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.parse_model = parse_model
        self.timeout = timeout
        self._client = client
        self.name = "corenlp" + (f":{Path(parse_model).name}" if parse_model else "")

    def _properties(self) -> str:
        props = {
            "annotators": "tokenize,ssplit,pos,parse",
            "outputFormat": "json",
            "parse.binaryTrees": "false",
        }
        if self.parse_model:
            props["parse.model"] = self.parse_model
        return json.dumps(props)

    def _parse_one(self, client: Any, text: str) -> str:
        import httpx

        try:
            r = client.post(
                self.url + "/",
                params={"properties": self._properties()},
                content=text.encode("utf-8"),
                timeout=self.timeout,
            )
            r.raise_for_status()
            data = r.json()
        except httpx.HTTPError as e:
            raise ParserUnavailableError(
                f"CoreNLP server at {self.url} failed: {e}\n{_CORENLP_HELP}"
            ) from e
        except ValueError as e:
            raise ParserUnavailableError(
                f"CoreNLP server at {self.url} did not answer JSON: {e}"
            ) from e
        return " ".join(_root(s["parse"]) for s in data.get("sentences", []))

    def parse(self, texts: Sequence[str]) -> list[str]:
        httpx = _imported("httpx", f"httpx is not installed.\n{_CORENLP_HELP}")
        if self._client is not None:
            return [self._parse_one(self._client, t) for t in texts]
        with httpx.Client() as client:
            return [self._parse_one(client, t) for t in texts]


# --------------------------------------------------------------------------------------------
# Registry

ParserFactory = Callable[..., ConstituencyParser]

PARSERS: Registry[ParserFactory] = Registry("constituency parser")
PARSERS.add("corenlp", CoreNLPParser)
PARSERS.add("stanza", StanzaParser)
PARSERS.add("benepar", BeneparParser)


def register_parser(name: str, factory: ParserFactory, *, replace: bool = False) -> None:
    """Make ``get_parser(name, **options)`` build ``factory(**options)``."""
    if name in PARSERS and not replace:
        raise ValueError(f"a parser named {name!r} is already registered")
    PARSERS.add(name, factory, replace=True)


def available_parsers() -> list[str]:
    """Registered parser names (registered, not necessarily installed)."""
    return PARSERS.names()


def get_parser(name: str, **options: Any) -> ConstituencyParser:
    """Build a registered parser. Nothing heavy is imported until its first ``parse`` call."""
    if name not in PARSERS:
        raise ParserUnavailableError(
            f"unknown parser {name!r}{did_you_mean(name, available_parsers())}; registered: "
            f"{', '.join(available_parsers())}"
        )
    factory = PARSERS.get(name)
    return factory(**options)


# --------------------------------------------------------------------------------------------
# Caching: parse each unique text once


def _check(parser: ConstituencyParser, texts: Sequence[str], trees: Sequence[str]) -> None:
    if len(trees) != len(texts):
        raise LexsemError(
            f"parser {parser.name!r} returned {len(trees)} trees for {len(texts)} texts"
        )
    for text, tree in zip(texts, trees, strict=True):
        if not isinstance(tree, str) or not tree.strip().startswith("("):
            raise LexsemError(
                f"parser {parser.name!r} returned {tree!r} for {text!r}; expected a bracketed tree"
            )


def parse_unique(
    parser: ConstituencyParser, texts: Iterable[str], *, batch_size: int = 256
) -> dict[str, str]:
    """Parse every distinct text once (in first-seen order, in batches); text -> tree string."""
    unique = list(dict.fromkeys(texts))
    out: dict[str, str] = {}
    for start in range(0, len(unique), batch_size):
        chunk = unique[start : start + batch_size]
        trees = parser.parse(chunk)
        _check(parser, chunk, trees)
        out.update(zip(chunk, trees, strict=True))
    return out


def default_parse_cache(parser_name: str) -> Path:
    """``<cache>/parses/<parser name>.jsonl`` (the name made file-safe)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in parser_name)
    return cache_dir() / "parses" / f"{safe}.jsonl"


class CachingParser:
    """Wraps a parser: every distinct text is parsed once; results kept in memory and, if
    ``path`` is given (``True`` = ``default_parse_cache(parser.name)``), appended to a JSON-lines
    file keyed by the sha256 of the text, so a later run reuses them. Lines that cannot be read
    (e.g. a run killed mid-write) are ignored."""

    def __init__(
        self,
        parser: ConstituencyParser,
        path: str | os.PathLike[str] | bool | None = None,
        *,
        batch_size: int = 256,
    ) -> None:
        self.parser = parser
        self.name = parser.name
        self.batch_size = batch_size
        if path is True:
            path = default_parse_cache(parser.name)
        self.path = Path(path) if path else None
        self._memo: dict[str, str] = {}
        self.parsed = 0  # texts sent to the underlying parser (for tests and logs)
        if self.path is not None and self.path.exists():
            self._load(self.path)

    @staticmethod
    def _key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def _load(self, path: Path) -> None:
        for _, rec in read_jsonl(path, on_error=lambda _bad_line: None):
            if not isinstance(rec, dict):
                continue
            key, tree = rec.get("key"), rec.get("tree")
            if isinstance(key, str) and isinstance(tree, str):
                self._memo[key] = tree

    def _store(self, new: dict[str, str]) -> None:
        if self.path is None or not new:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lines = "".join(
            json.dumps({"key": k, "tree": v}, ensure_ascii=False) + "\n" for k, v in new.items()
        )
        with self.path.open("a", encoding="utf-8") as f:
            f.write(lines)
            f.flush()
            os.fsync(f.fileno())

    def parse(self, texts: Sequence[str]) -> list[str]:
        keys = [self._key(t) for t in texts]
        todo = (t for t, k in zip(texts, keys, strict=True) if k not in self._memo)
        missing = list(dict.fromkeys(todo))
        for start in range(0, len(missing), self.batch_size):
            chunk = missing[start : start + self.batch_size]
            trees = self.parser.parse(chunk)
            _check(self.parser, chunk, trees)
            self.parsed += len(chunk)
            new = {self._key(t): tree for t, tree in zip(chunk, trees, strict=True)}
            self._memo.update(new)
            self._store(new)
        return [self._memo[k] for k in keys]
