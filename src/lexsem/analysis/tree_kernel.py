"""Syntactic similarity of constituency trees with tree kernels (FastKASSIM-style).

SugarCrepe++ (App. D) measures syntactic similarity with FastKASSIM (Chen et al., EACL 2023) "with
default parameters". FastKASSIM's default metric is its *label tree kernel* (LTK), sigma = 1,
lambda = 0.4, word leaves excluded, normalised per sentence pair as K(a,b)/sqrt(K(a,a)K(b,b)); a
multi-sentence text is a list of sentence trees, and two texts are compared by the best one-to-one
matching of their sentences (Hungarian, maximising), the matched scores summed and divided by the
larger sentence count ("average=False"). This module implements that, on trees given as
bracketed strings "(ROOT (S (NP (DT a) (NN cat)) (VP ...)))".

Kernels (K = sum over all pairs of non-leaf nodes n1 of a, n2 of b of Delta(n1, n2)):

- ``"ltk"`` (default, FastKASSIM's LTK): Delta = 0 if the labels differ; lambda if both nodes are
  pre-terminals (or leaves); otherwise lambda * prod over the children c1 of n1 of
  (sigma + sum over the children c2 of n2 of Delta(c1, c2)). Only labels are compared, a child may
  match any same-label child of the other node, so Delta is not symmetric in general (a node with
  children [NN] against one with [NN, NN]) and neither is K. With ``fastkassim_compat=True`` (the
  default) the memo of Delta values is keyed by the unordered node pair, exactly as FastKASSIM's
  ``DeltaVector`` is; this only changes self-kernels K(a, a) of trees that contain such an
  asymmetric pair, and reproduces FastKASSIM's numbers. ``fastkassim_compat=False`` keys the memo
  by the ordered pair (the kernel as written on paper).
- ``"sst"``: the subset-tree kernel of Collins & Duffy (2002) / Moschitti (2006): Delta = 0 if the
  productions differ; lambda if both are pre-terminals; otherwise
  lambda * prod_i (sigma + Delta(c1_i, c2_i)). With lambda = sigma = 1 it counts common tree
  fragments; sigma = 0 gives the subtree kernel. ``include_leaves=False`` (default) drops the
  words first, so part-of-speech tags are the leaves and only syntax counts. Symmetric.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypedDict, get_args

import numpy as np

if TYPE_CHECKING:
    from typing_extensions import Unpack

KernelKind = Literal["ltk", "sst"]
KERNELS: tuple[str, ...] = get_args(KernelKind)

#: FastKASSIM's defaults (``LabelTreeKernel.config``): LTK, sigma=1, lambda=0.4, average=False.
FASTKASSIM_LAMBDA = 0.4
FASTKASSIM_SIGMA = 1.0


@dataclass(frozen=True, slots=True)
class Tree:
    """A constituency tree: a label and its children (subtrees, or words as plain strings).

    Equality is structural (labels and words), as for ``nltk.Tree``.
    """

    label: str
    children: tuple[Tree | str, ...] = ()

    def is_preterminal(self) -> bool:
        """True when every child is a word (or there are none), e.g. ``(NN cat)``."""
        return all(isinstance(c, str) for c in self.children)

    def leaves(self) -> list[str]:
        out: list[str] = []
        for c in self.children:
            if isinstance(c, str):
                out.append(c)
            else:
                out.extend(c.leaves())
        return out

    def height(self) -> int:
        """1 for a tree without children, 2 for a pre-terminal, ... (nltk's convention)."""
        return 1 + max((1 if isinstance(c, str) else c.height() for c in self.children), default=0)

    def __str__(self) -> str:
        parts = [self.label] + [c if isinstance(c, str) else str(c) for c in self.children]
        return "(" + " ".join(p for p in parts if p != "") + ")"


_TOKEN = re.compile(r"\(|\)|[^\s()]+")


def parse_forest(text: str) -> list[Tree]:
    """Parse one or more bracketed trees, "(ROOT (S ...)) (ROOT (S ...))", one per sentence.

    A tree is "(" LABEL CHILD* ")" where a child is a tree or a word; the label may be omitted
    (Penn Treebank files write "( (S ...))"), which gives the label "".
    """
    tokens = _TOKEN.findall(text)
    trees: list[Tree] = []
    pos = 0

    def fail(msg: str) -> ValueError:
        return ValueError(f"bad bracketed tree ({msg}): {text[:200]!r}")

    def read(i: int) -> tuple[Tree, int]:
        # tokens[i] == "("
        i += 1
        if i >= len(tokens):
            raise fail("unexpected end after '('")
        label = ""
        if tokens[i] not in ("(", ")"):
            label = tokens[i]
            i += 1
        children: list[Tree | str] = []
        while True:
            if i >= len(tokens):
                raise fail("missing ')'")
            tok = tokens[i]
            if tok == ")":
                return Tree(label, tuple(children)), i + 1
            if tok == "(":
                child, i = read(i)
                children.append(child)
            else:
                children.append(tok)
                i += 1

    while pos < len(tokens):
        if tokens[pos] != "(":
            raise fail(f"expected '(' but found {tokens[pos]!r}")
        tree, pos = read(pos)
        trees.append(tree)
    if not trees:
        raise fail("no tree")
    return trees


def parse_tree(text: str) -> Tree:
    """Parse exactly one bracketed tree."""
    trees = parse_forest(text)
    if len(trees) != 1:
        raise ValueError(f"expected one tree, found {len(trees)}: {text[:200]!r}")
    return trees[0]


TreeLike = Tree | str


def _as_tree(t: TreeLike) -> Tree:
    return parse_tree(t) if isinstance(t, str) else t


def _as_forest(t: TreeLike | Sequence[TreeLike]) -> list[Tree]:
    if isinstance(t, Tree):
        return [t]
    if isinstance(t, str):
        return parse_forest(t)
    return [_as_tree(x) for x in t]


# --------------------------------------------------------------------------------------------
# Flattened trees: every node (words included) gets an index; kernels run on these arrays.


@dataclass(frozen=True, slots=True)
class _Flat:
    labels: tuple[str, ...]
    children: tuple[tuple[int, ...], ...]
    preterminal: tuple[bool, ...]  # no children, or only word children
    internal: tuple[int, ...]  # root, then the non-leaf nodes breadth-first (FastKASSIM's order)
    productions: tuple[tuple[str, ...], ...]  # (label, child labels...) for the SST


def _flatten(tree: Tree, include_leaves: bool = True) -> _Flat:
    labels: list[str] = []
    children: list[tuple[int, ...]] = []
    pre: list[bool] = []

    def add(node: Tree | str) -> int:
        idx = len(labels)
        labels.append(node if isinstance(node, str) else node.label)
        children.append(())
        pre.append(True)
        if isinstance(node, Tree):
            kids = [c for c in node.children if include_leaves or not isinstance(c, str)]
            ids = tuple(add(c) for c in kids)
            children[idx] = ids
            pre[idx] = all(not children[c] for c in ids)
        return idx

    add(tree)
    # Root first, then breadth-first over the nodes that have children (words are skipped).
    internal = [0]
    queue = [0]
    while queue:
        node = queue.pop(0)
        for c in children[node]:
            if children[c]:
                internal.append(c)
                queue.append(c)
    prods = tuple((labels[i], *(labels[c] for c in children[i])) for i in range(len(labels)))
    return _Flat(tuple(labels), tuple(children), tuple(pre), tuple(internal), prods)


def _ltk(fx: _Flat, fy: _Flat, shared: bool, lam: float, sigma: float, compat: bool) -> float:
    """FastKASSIM's label tree kernel (``LabelTreeKernel.kernel_computation``, LTK mode)."""
    memo: dict[tuple[int, int], float] = {}
    unordered = shared and compat

    def delta(i: int, j: int) -> float:
        key = (j, i) if unordered and j < i else (i, j)
        cached = memo.get(key)
        if cached:  # FastKASSIM treats a cached 0 as "not cached"; same here
            return cached
        if fx.labels[i] != fy.labels[j]:
            return 0.0
        if fx.preterminal[i] and fy.preterminal[j]:
            memo[key] = lam
            return lam
        prod = 1.0
        for ci in fx.children[i]:
            s = 0.0
            for cj in fy.children[j]:
                s += delta(ci, cj)
            prod *= sigma + s
        value = lam * prod
        memo[key] = value
        return value

    return math.fsum(delta(i, j) for i in fx.internal for j in fy.internal)


def _sst(fx: _Flat, fy: _Flat, lam: float, sigma: float) -> float:
    """Collins-Duffy subset-tree kernel over the flattened trees (words already kept or not)."""
    memo: dict[tuple[int, int], float] = {}

    def delta(i: int, j: int) -> float:
        if not fx.children[i] or not fy.children[j] or fx.productions[i] != fy.productions[j]:
            return 0.0
        key = (i, j)
        if key in memo:
            return memo[key]
        if fx.preterminal[i]:  # same production, so fy's node is a pre-terminal too
            value = lam
        else:
            value = lam
            for ci, cj in zip(fx.children[i], fy.children[j], strict=True):
                value *= sigma + delta(ci, cj)
        memo[key] = value
        return value

    return math.fsum(delta(i, j) for i in fx.internal for j in fy.internal)


class KernelOptions(TypedDict, total=False):
    """The keyword arguments that configure a kernel: those of `TreeKernel`, `average` aside."""

    kind: KernelKind
    lam: float | None
    sigma: float
    include_leaves: bool
    fastkassim_compat: bool


def tree_kernel(a: TreeLike, b: TreeLike, **options: Unpack[KernelOptions]) -> float:
    """The raw (unnormalised) kernel K(a, b) of two single trees (`options`: `TreeKernel`'s)."""
    return TreeKernel(**options).kernel(_as_tree(a), _as_tree(b))


class TreeKernel:
    """A configured kernel with memoised parsing and self-kernels, for many comparisons.

    ``lam`` defaults to 0.4 for the LTK (FastKASSIM) and 1.0 for the SST (fragment counting).
    ``include_leaves`` only applies to the SST (the LTK never looks at words, as FastKASSIM).

    ``similarity(a, b)`` is the normalised kernel K(a,b)/sqrt(K(a,a)K(b,b)) of two sentence trees
    (0 when either self-kernel is 0); ``document_similarity`` is FastKASSIM's text-level score over
    sentence forests.
    """

    def __init__(
        self,
        kind: KernelKind = "ltk",
        *,
        lam: float | None = None,
        sigma: float = FASTKASSIM_SIGMA,
        include_leaves: bool = False,
        fastkassim_compat: bool = True,
        average: bool = False,
    ) -> None:
        if kind not in KERNELS:
            raise ValueError(f"unknown tree kernel {kind!r}; choose one of {', '.join(KERNELS)}")
        self.kind: KernelKind = kind
        self.lam = (FASTKASSIM_LAMBDA if kind == "ltk" else 1.0) if lam is None else float(lam)
        self.sigma = float(sigma)
        self.include_leaves = include_leaves
        self.fastkassim_compat = fastkassim_compat
        self.average = average
        self._forests: dict[str, tuple[Tree, ...]] = {}
        self._flat: dict[Tree, _Flat] = {}
        self._self: dict[Tree, float] = {}

    def params(self) -> dict[str, object]:
        """Everything that changes the scores (for provenance)."""
        return {
            "kind": self.kind,
            "lambda": self.lam,
            "sigma": self.sigma,
            "include_leaves": self.include_leaves if self.kind == "sst" else False,
            "fastkassim_compat": self.fastkassim_compat if self.kind == "ltk" else None,
            "average": self.average,
        }

    def forest(self, t: TreeLike | Sequence[TreeLike]) -> tuple[Tree, ...]:
        if isinstance(t, str):
            hit = self._forests.get(t)
            if hit is None:
                hit = tuple(parse_forest(t))
                self._forests[t] = hit
            return hit
        return tuple(_as_forest(t))

    def _flatten(self, t: Tree) -> _Flat:
        f = self._flat.get(t)
        if f is None:
            f = _flatten(t, include_leaves=True if self.kind == "ltk" else self.include_leaves)
            self._flat[t] = f
        return f

    def kernel(self, a: Tree, b: Tree) -> float:
        shared = a == b
        fa = self._flatten(a)
        fb = fa if shared else self._flatten(b)
        if self.kind == "ltk":
            return _ltk(fa, fb, shared, self.lam, self.sigma, self.fastkassim_compat)
        return _sst(fa, fb, self.lam, self.sigma)

    def self_kernel(self, t: Tree) -> float:
        v = self._self.get(t)
        if v is None:
            v = self.kernel(t, t)
            self._self[t] = v
        return v

    def similarity(self, a: TreeLike, b: TreeLike) -> float:
        """Normalised kernel of two sentence trees: K(a,b) / sqrt(K(a,a) K(b,b))."""
        ta, tb = _as_tree(a), _as_tree(b)
        kaa, kbb = self.self_kernel(ta), self.self_kernel(tb)
        if kaa <= 0.0 or kbb <= 0.0:
            return 0.0
        return self.kernel(ta, tb) / math.sqrt(kaa * kbb)

    def document_similarity(
        self, a: TreeLike | Sequence[TreeLike], b: TreeLike | Sequence[TreeLike]
    ) -> float:
        """FastKASSIM's text-level score over the sentence trees of two texts.

        A string may hold several top-level trees (one per sentence). The sentence-by-sentence
        matrix of normalised kernels is reduced by the maximum-weight one-to-one matching, the sum
        divided by the larger number of sentences (``average=True``: the matrix mean instead).
        With one sentence each this is just ``similarity``.
        """
        fa, fb = self.forest(a), self.forest(b)
        if not fa or not fb:
            raise ValueError("syntactic similarity needs at least one tree on each side")
        if len(fa) == 1 and len(fb) == 1:
            return self.similarity(fa[0], fb[0])
        m = np.array([[self.similarity(x, y) for y in fb] for x in fa], dtype=np.float64)
        if self.average:
            return float(m.mean())
        from scipy.optimize import linear_sum_assignment

        rows, cols = linear_sum_assignment(m, maximize=True)
        return float(m[rows, cols].sum() / max(len(fa), len(fb)))


def normalized_tree_kernel(a: TreeLike, b: TreeLike, **options: Unpack[KernelOptions]) -> float:
    """K(a,b) / sqrt(K(a,a) K(b,b)) for two single trees (FastKASSIM's per-sentence score)."""
    return TreeKernel(**options).similarity(a, b)


def syntactic_similarity(
    a: TreeLike | Sequence[TreeLike],
    b: TreeLike | Sequence[TreeLike],
    *,
    average: bool = False,
    **options: Unpack[KernelOptions],
) -> float:
    """FastKASSIM syntactic similarity of two parsed texts (defaults = FastKASSIM's defaults).

    ``a`` and ``b`` are bracketed strings (one tree per sentence), ``Tree`` objects or lists of
    them. For many pairs build one ``TreeKernel`` and call ``document_similarity`` (it memoises).
    """
    return TreeKernel(average=average, **options).document_similarity(a, b)


def unique_labels(trees: Iterable[Tree]) -> set[str]:
    """All non-word labels of some trees (handy for checking parser output)."""
    out: set[str] = set()
    stack: list[Tree] = list(trees)
    while stack:
        t = stack.pop()
        out.add(t.label)
        stack.extend(c for c in t.children if isinstance(c, Tree))
    return out
