"""A fake OpenAI-compatible chat server whose answers are fixed rules, not a model: for trying the
LLM recipes (`scpp_positive`, `sugarcrepe_negatives`) offline, with no model at all.

``python -m lexsem.fake_llm [--host 127.0.0.1] [--port 8001]`` (or ``make fake-llm``) serves
``GET /v1/models`` (one model, `MODEL`) and ``POST /v1/chat/completions`` (OpenAI's chat format;
a message's content is text or a list of parts, whose images are ignored), then the recipes run
with ``--generator 'openai:lexsem-fake?base_url=http://127.0.0.1:8001/v1'``. Another model name is
404, so a recipe still naming a real model is never answered by rules.

The answer to a conversation (`answer`) is deterministic, chosen by what the prompt is:

- SugarCrepe++'s generation prompt M{P1} (`lexsem.construct.scpp_positive`): "Paraphrased: In
  the picture, P1" (its first word lower-cased unless it may be a name); the full-context
  prompt M{P1; P2}: "Paraphrased: Pictured: P1"; both pass the stage's safeguards (not
  identical to P1; at least a quarter of the answer's words are P1's, for a P1 with a word);
- SugarCrepe++'s validation prompt V{P1, P2}: "isConsistent: Yes, ... newCaption: P2";
- a SugarCrepe template (`lexsem.construct.sugarcrepe_templates`): the category's answer format
  with one word-level edit of the caption from small word lists (a noun, an adjective or a
  relation replaced; two nouns or two adjectives swapped; a noun or an adjective added; "a" /
  "an" then made to fit), or the answer without a negative ("No", an empty list) when the lists
  find nothing to edit (the stage rejects that row as unparseable);
- anything else: "(1)" when the prompt numbers options "(1) ...; (2) ...", else "Yes".

A response is a chat completion with ``model``, ``choices[0].message.content``, ``usage``
(words, not tokens) and ``system_fingerprint`` `FINGERPRINT`, which says it is the fake. A
benchmark built from these answers is for trying the tool, never for measuring a model.

Limits: bodies over `MAX_BODY` bytes are 413, JSON nested deeper than `MAX_DEPTH` or not JSON
is 400, unknown paths 404, ``stream: true`` 400; a connection idle for `TIMEOUT` seconds is
closed. It binds to 127.0.0.1 unless told otherwise. `serve_in_thread` runs it in a thread
(tests: ``with serve_in_thread() as base_url``).
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import re
import socket
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from lexsem.errors import DataError
from lexsem.jsonl import check_depth

__all__ = [
    "FINGERPRINT",
    "MAX_BODY",
    "MAX_DEPTH",
    "MODEL",
    "answer",
    "banner",
    "completion",
    "main",
    "make_server",
    "serve_in_thread",
]

MODEL = "lexsem-fake"
FINGERPRINT = "lexsem-fake-rules"
MAX_BODY = 1 << 20  # bytes of a request body
MAX_DEPTH = 32  # nesting of a request's JSON
TIMEOUT = 30.0  # seconds a connection may stay silent

# -- the rules ------------------------------------------------------------------------------------


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


_LOWER_FIRST = _wordset(
    "a an the one two three four five six seven eight nine ten some several many this that "
    "these those there"
)
NOUNS = {
    "man": "woman", "woman": "man", "men": "women", "women": "men", "boy": "girl",
    "girl": "boy", "boys": "girls", "girls": "boys", "dog": "cat", "cat": "dog", "dogs": "cats",
    "cats": "dogs", "car": "truck", "truck": "car", "bus": "train", "train": "bus",
    "table": "desk", "desk": "table", "chair": "bench", "bench": "chair", "horse": "cow",
    "cow": "horse", "bird": "kite", "kite": "bird", "person": "child", "child": "person",
    "people": "children", "plate": "bowl", "bowl": "plate", "bed": "couch", "couch": "bed",
    "sofa": "bed", "street": "road", "road": "street", "bike": "motorcycle",
    "motorcycle": "bike", "pizza": "cake", "cake": "pizza", "phone": "camera",
    "camera": "phone", "kitchen": "bathroom", "bathroom": "kitchen", "tree": "pole",
    "shirt": "jacket", "hat": "helmet", "beach": "field", "field": "beach", "mat": "rug",
    "sheep": "goats", "elephant": "giraffe", "giraffe": "elephant", "laptop": "book",
    "book": "laptop", "sign": "poster", "clock": "mirror", "window": "door", "door": "window",
}  # fmt: skip
ADJECTIVES = {
    "red": "blue", "blue": "red", "green": "yellow", "yellow": "green", "white": "black",
    "black": "white", "brown": "gray", "gray": "brown", "grey": "brown", "orange": "purple",
    "pink": "green", "purple": "orange", "large": "small", "small": "large", "big": "little",
    "little": "big", "young": "old", "old": "young", "tall": "short", "short": "tall",
    "wooden": "metal", "metal": "wooden", "clean": "dirty", "dirty": "clean", "empty": "full",
    "full": "empty", "open": "closed", "closed": "open", "dark": "bright", "bright": "dark",
}  # fmt: skip
RELATIONS = {
    "on": "under", "under": "on", "in": "outside", "inside": "outside", "above": "below",
    "below": "above", "behind": "in front of", "near": "far from", "beside": "far from",
    "with": "without", "holding": "dropping", "riding": "pushing", "sitting": "standing",
    "standing": "sitting", "eating": "holding", "walking": "running", "running": "walking",
    "playing": "watching", "looking": "pointing", "carrying": "pulling", "over": "under",
}  # fmt: skip
_FUNCTION = _wordset(
    "a an the is are was were be been of on in at to by for from with and or but his her its "
    "their our my your this that these those there here it he she they we some two three four "
    "five six seven eight nine ten one several many next near under above below behind front "
    "top side while who which what into onto out over up down very as"
)
_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)*")


def _spans(text: str) -> list[tuple[int, int, str]]:
    return [(m.start(), m.end(), m.group()) for m in _WORD.finditer(text)]


def _cased(new: str, old: str) -> str:
    return new[:1].upper() + new[1:] if old[:1].isupper() else new


def _put(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


def _content(word: str) -> bool:
    """A word that may be a noun: not a function word, adjective, relation or -ing/-ly word."""
    w = word.lower()
    return (len(w) >= 3 and w not in _FUNCTION and w not in ADJECTIVES and w not in RELATIONS
            and not w.endswith(("ing", "ly")))  # fmt: skip


def _nouns(text: str) -> list[tuple[int, int, str]]:
    """The words taken for nouns: those of `NOUNS`, else the content words."""
    spans = _spans(text)
    known = [s for s in spans if s[2].lower() in NOUNS]
    return known or [s for s in spans if _content(s[2])]


def _replace(text: str, table: dict[str, str]) -> tuple[str, str, str] | None:
    """(old word, new word, sentence) for the first word of `text` found in `table`."""
    for start, end, word in _spans(text):
        new = table.get(word.lower())
        if new is not None:
            return word, new, _put(text, start, end, _cased(new, word))
    return None


def _replace_noun(text: str) -> tuple[str, str, str] | None:
    found = _replace(text, NOUNS)
    if found is not None:
        return found
    nouns = _nouns(text)
    if not nouns:
        return None
    start, end, word = nouns[-1]
    new = "statues" if word.lower().endswith("s") else "statue"
    return word, new, _put(text, start, end, _cased(new, word))


def _swap(text: str, spans: list[tuple[int, int, str]]) -> tuple[str, str, str] | None:
    """(first, last, sentence): the first and last of `spans` with other words, swapped."""
    for i, first in enumerate(spans):
        for last in reversed(spans[i + 1 :]):
            if first[2].lower() != last[2].lower():
                out = _put(text, last[0], last[1], _cased(first[2].lower(), last[2]))
                out = _put(out, first[0], first[1], _cased(last[2].lower(), first[2]))
                return first[2], last[2], out
    return None


def _insert_before(text: str, span: tuple[int, int, str], word: str) -> str:
    """`word` inserted before `span`'s word; at the start of the text, `word` takes the
    capital."""
    head, tail = text[: span[0]], text[span[0] :]
    if not head.strip():
        return head + _cased(word, tail) + " " + tail[:1].lower() + tail[1:]
    return head + word + " " + tail


_ARTICLE = re.compile(r"\b([Aa]n?)(\s+)([A-Za-z])")


def _articles(text: str) -> str:
    """Each "a" / "an" as the next word's first letter asks (a vowel: "an")."""

    def fix(m: re.Match[str]) -> str:
        article = "an" if m.group(3).lower() in "aeiou" else "a"
        return _cased(article, m.group(1)) + m.group(2) + m.group(3)

    return _ARTICLE.sub(fix, text)


def _sugarcrepe(category: str, caption: str) -> str:
    """The answer to `category`'s template about `caption`, in the template's format."""

    def sentence(lines: str, new: str) -> str:
        return f"{lines}\nNew sentence: {_articles(new)}\n"

    if category == "replace_obj":
        found = _replace_noun(caption)
        if found is None:
            return "Nouns: []\n"
        old, new, out = found
        return sentence(f'Nouns: ["{old}"]\nSelected noun: {old}\nNew noun: {new}', out)
    if category in ("replace_att", "replace_rel"):
        table, what = (ADJECTIVES, "adjective") if category == "replace_att" else (
            RELATIONS, "relationship")  # fmt: skip
        plural = "Adjectives" if what == "adjective" else "Relationships"
        found = _replace(caption, table)
        if found is None:
            return f"{plural}: []\n"
        old, new, out = found
        return sentence(f'{plural}: ["{old}"]\nSelected {what}: {old}\nNew {what}: {new}', out)
    if category in ("swap_obj", "swap_att"):
        spans = _nouns(caption) if category == "swap_obj" else [
            s for s in _spans(caption) if s[2].lower() in ADJECTIVES]  # fmt: skip
        found = _swap(caption, spans)
        if found is None:
            return "No\n"
        a, b, out = found
        what = "noun phrases" if category == "swap_obj" else "attributes"
        return f"Yes\nSwappable {what}: {a}, {b}\nOutput: {_articles(out)}\n"
    if category in ("add_obj", "add_att"):
        nouns = _nouns(caption)
        if not nouns:
            return "Objects: []\n"
        target = nouns[0]
        words = {w.lower() for _, _, w in _spans(caption)}
        if category == "add_obj":
            new = next(n for n in ("dog", "cat", "umbrella") if n not in words)
            out = caption[: target[1]] + f" and a {new}" + caption[target[1] :]
            line = f"New object: {new}"
        else:
            new = next(a for a in ("striped", "tiny", "shiny") if a not in words)
            out = _insert_before(caption, target, new)
            line = f"New attribute: {new}"
        return sentence(f'Objects: ["{target[2]}"]\nSelected object: {target[2]}\n{line}', out)
    return "Yes\n"


# What identifies each SugarCrepe template: a phrase of its instructions (the swap templates'
# own question reads "swap attributes" for both, so the instructions decide).
_CATEGORIES = (
    ("swappable noun phrases", "swap_obj"),
    ("swappable adjectives", "swap_att"),
    ("Locate the noun words", "replace_obj"),
    ("Locate the adjective words", "replace_att"),
    ("action or spatial relationships", "replace_rel"),
    ("uncommon attribute", "add_att"),
    ("Generate a new object", "add_obj"),
)
_SWAP_ASK = re.compile(r"Input: (.*?) Is it possible to swap attributes", re.S)


def _first_lower(caption: str) -> str:
    words = caption.split(maxsplit=1)
    if words and words[0].lower() in _LOWER_FIRST | NOUNS.keys() | ADJECTIVES.keys():
        return caption[:1].lower() + caption[1:]
    return caption


def _rewrite(p1: str, lead: str) -> str:
    """`lead` (its own punctuation) before P1, whose first word is lower-cased when it is not a
    name (an article, a number, a word of the lists), with a full stop."""
    core = _first_lower(p1.strip()).rstrip(" .")
    return f"{lead} {core}." if core else f"{lead} nothing else."


def _between(text: str, start: str, end: str) -> str | None:
    at = text.rfind(start)
    if at < 0:
        return None
    rest = text[at + len(start) :]
    stop = rest.find(end)
    return rest[:stop] if stop >= 0 else None


def _texts(messages: Sequence[Any]) -> list[tuple[str, str]]:
    """(role, text) of each message; a list content's text parts joined, its images ignored."""
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            content = "\n".join(
                p["text"]
                for p in content
                if isinstance(p, dict)
                and p.get("type") == "text"
                and isinstance(p.get("text"), str)
            )
        out.append((str(m.get("role")), content if isinstance(content, str) else ""))
    return out


def answer(messages: Sequence[Any]) -> str:
    """The rule's answer to a conversation (OpenAI `messages`; module doc)."""
    texts = _texts(messages)
    users = [t for role, t in texts if role == "user"]
    last = users[-1] if users else ""
    if "instruction-following DataGenAI" in last and "Paraphrased:" in last:
        p1 = _between(last, "Input: ", " Paraphrase Idea: Focus on replicating")
        p1 = p1 if p1 is not None else ""
        if "Your paraphrased sentence was:" in last:
            return "Paraphrased: " + _rewrite(p1, "Pictured:")
        return "Paraphrased: " + _rewrite(p1, "In the picture,")
    if last.startswith("Instruction: Given a pair of captions"):
        p2 = _between(last, "caption 2: ", " isConsistent:") or ""
        return (
            "isConsistent: Yes, caption 2 describes the same scene as caption 1. "
            f"newCaption: {p2.strip()}"
        )
    everything = "\n".join(t for _, t in texts)
    category = next((c for phrase, c in _CATEGORIES if phrase in everything), None)
    if category is not None and len(users) >= 2:
        swap = _SWAP_ASK.search(last)
        if swap:
            return _sugarcrepe(category, swap.group(1).strip())
        if last.startswith("Original sentence: "):
            return _sugarcrepe(category, last[len("Original sentence: ") :].strip())
    if "(1)" in last and "(2)" in last:
        return "(1)"
    return "Yes"


def completion(body: dict[str, Any]) -> dict[str, Any]:
    """The chat completion answering a request body (already checked)."""
    messages = body["messages"]
    text = answer(messages)
    prompt_words = sum(len(t.split()) for _, t in _texts(messages))
    return {
        "id": "chatcmpl-lexsem-fake",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "system_fingerprint": FINGERPRINT,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_words,
            "completion_tokens": len(text.split()),
            "total_tokens": prompt_words + len(text.split()),
        },
    }


# -- the server -----------------------------------------------------------------------------------


class _Refused(Exception):
    def __init__(self, status: int, message: str, code: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


def _checked(raw: bytes) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
        check_depth(text, "the request body", max_depth=MAX_DEPTH)
        body = json.loads(text)
    except DataError:
        raise _Refused(400, f"the body nests deeper than {MAX_DEPTH}") from None
    except (UnicodeDecodeError, ValueError):
        raise _Refused(400, "the body is not JSON") from None
    if not isinstance(body, dict):
        raise _Refused(400, "the body is not a JSON object")
    if body.get("model") != MODEL:
        raise _Refused(
            404,
            f"model {body.get('model')!r} not found: this fake server (answers are rules, "
            f"not a model) serves only {MODEL!r}",
            "model_not_found",
        )
    if body.get("stream"):
        raise _Refused(400, "stream: this fake server does not stream")
    messages = body.get("messages")
    if (
        not isinstance(messages, list)
        or not messages
        or not all(
            isinstance(m, dict) and isinstance(m.get("content"), str | list) for m in messages
        )
    ):
        raise _Refused(400, "messages: a non-empty list of {role, content} objects")
    return body


class _Handler(BaseHTTPRequestHandler):
    server_version = "lexsem-fake-llm"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    timeout = TIMEOUT
    quiet = False

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, refused: _Refused) -> None:
        self._send(refused.status, {"error": {"message": refused.message, "type": refused.code,
                                              "code": refused.status}})  # fmt: skip

    def _path(self) -> str:
        return self.path.split("?", 1)[0].rstrip("/")

    def do_GET(self) -> None:
        if self._path() == "/v1/models":
            model = {"id": MODEL, "object": "model", "created": 0, "owned_by": FINGERPRINT}
            self._send(200, {"object": "list", "data": [model]})
        else:
            self._error(_Refused(404, f"no such path: {self._path() or '/'}", "not_found"))

    def do_POST(self) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY:
            self.close_connection = True  # the body is not read
            self._error(_Refused(413, f"the body is over {MAX_BODY} bytes", "too_large"))
            return
        raw = self.rfile.read(length)
        if self._path() != "/v1/chat/completions":
            self._error(_Refused(404, f"no such path: {self._path() or '/'}", "not_found"))
            return
        try:
            self._send(200, completion(_checked(raw)))
        except _Refused as refused:
            self._error(refused)

    def log_message(self, format: str, *args: Any) -> None:
        if not self.quiet:
            super().log_message(format, *args)


def make_server(host: str = "127.0.0.1", port: int = 8001, *, quiet: bool = False) -> Any:
    """The server (not yet serving), bound to host:port (port 0: a free one)."""
    handler = type("Handler", (_Handler,), {"quiet": quiet})
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    server_class = type("Server", (ThreadingHTTPServer,),
                        {"daemon_threads": True, "address_family": family})  # fmt: skip
    return server_class((host, port), handler)


def _base_url(server: Any) -> str:
    host, port = server.server_address[:2]
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{port}/v1"


def banner(base_url: str) -> str:
    """The line printed when the server starts: its address, what it is, the generator spec."""
    return (f"lexsem fake LLM at {base_url} — answers are rules, not a model; "
            f"generator spec: openai:{MODEL}?base_url={base_url}")  # fmt: skip


@contextmanager
def serve_in_thread(host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """The server running in a thread while the block runs; yields its base URL (``.../v1``)."""
    server = make_server(host, port, quiet=True)
    thread = threading.Thread(target=server.serve_forever, name="lexsem-fake-llm", daemon=True)
    thread.start()
    try:
        yield _base_url(server)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m lexsem.fake_llm``: serve until interrupted."""
    parser = argparse.ArgumentParser(
        prog="python -m lexsem.fake_llm",
        description="A fake OpenAI-compatible chat server: answers are rules, not a model.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (127.0.0.1)")
    parser.add_argument("--port", type=int, default=8001, help="port (8001; 0: a free one)")
    parser.add_argument("--quiet", action="store_true", help="no line per request")
    args = parser.parse_args(argv)
    try:
        server = make_server(args.host, args.port, quiet=args.quiet)
    except OSError as exc:
        hint = (
            "another server holds it: give another --port" if exc.errno == errno.EADDRINUSE else ""
        )
        print(f"error: cannot listen on {args.host}:{args.port} "
              f"({os.strerror(exc.errno) if exc.errno else exc}) {hint}".rstrip(),
              file=sys.stderr)  # fmt: skip
        return 2
    print(banner(_base_url(server)), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
