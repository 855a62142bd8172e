"""The paper's row-major EM and F1 (SPINACH, section 5.1), fast on large results.

A gold row's recall against a predicted row is the share of the gold row's
values found in the predicted row: values are whole SPARQL JSON terms (type,
value, language, datatype) compared as multisets, variable names are ignored,
extra predicted columns cost nothing, and gold columns named ``...Label`` or
``...Description`` are left out.  Rows are paired by a maximum-weight
assignment in which zero-recall pairs do not count as matched; with ``r``
matched pairs, ``n`` gold and ``n'`` predicted rows::

    tp = Σ recall    fn = n - r + Σ (1 - recall)    fp = n' - r
    F1 = 2 tp / (2 tp + fp + fn)                      EM = (F1 == 1)

Numeric literals: with ``numbers_by_value`` a typed numeric literal (any XSD
numeric datatype) is one value whatever its lexical form or numeric type, so
``"+100"^^xsd:decimal`` equals ``"100"^^xsd:integer``.  QALD-10's file
answers need it: 14 of them carry a sign no query service writes.

Ties: several assignments can reach the same recall sum with different
numbers of matched pairs, and so different F1.  We take the one with the
fewest matched pairs among those with the highest sum (the lower F1: a tie
never flatters a prediction), by charging every non-zero pair a cost too
small to change which sums are highest.  Then F1 depends on the optimum
alone, not on the order in which a solver meets the rows, which is what makes
the fast path below exact.

Fast path: rows that share no value have zero recall, so the assignment
splits into independent blocks (connected components of the "shares a value"
graph), each solved on its own, small, dense matrix.  When every gold row has
the same number of values, a gold row identical to a predicted row (once the
predicted row's values that no gold row holds are set aside) is paired with it
first: no other partner can do better (see :func:`_pair_identical`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.sparse import bmat, csr_matrix, identity
from scipy.sparse.csgraph import connected_components, min_weight_full_bipartite_matching

from agent.kb.base import Binding

Answer = Sequence[Binding] | bool | None
Value = tuple[str, str, str, str]
Row = tuple[Value, ...]


_XSD = "http://www.w3.org/2001/XMLSchema#"
NUMERIC_DATATYPES = frozenset(_XSD + name for name in (
    "decimal", "integer", "double", "float", "int", "long", "short", "byte", "nonNegativeInteger",
    "positiveInteger", "negativeInteger", "nonPositiveInteger", "unsignedLong", "unsignedInt", "unsignedShort",
    "unsignedByte"))
#: The datatype every numeric literal gets when numbers are compared by value.
NUMBER = "number"


def term_key(term: dict[str, str], numbers_by_value: bool = False) -> Value:
    """A SPARQL JSON term as a comparable tuple (type, value, language, datatype).

    With *numbers_by_value*, a numeric literal becomes its value in canonical
    form (``+100``, ``100.0`` and ``1E2`` are one key); a lexical form that is
    not a number stays as it is.
    """
    key = (term.get("type", ""), term.get("value", ""), term.get("xml:lang", ""), term.get("datatype", ""))
    if numbers_by_value and key[3] in NUMERIC_DATATYPES:
        try:
            number = Decimal(key[1].strip())
        except InvalidOperation:
            return key
        canonical = "0" if number.is_zero() else format(number.normalize(), "f") if number.is_finite() else str(number)
        return ("literal", canonical, "", NUMBER)
    return key


def ignored_variable(name: str) -> bool:
    """Gold columns that only name or describe another column (``?xLabel``, ``?xDescription``)."""
    return name.endswith("Label") or name.endswith("Description")


def gold_rows(rows: Sequence[Binding], numbers_by_value: bool = False) -> list[Row]:
    return [tuple(sorted(term_key(term, numbers_by_value) for name, term in row.items() if not ignored_variable(name)))
            for row in rows]


def predicted_rows(rows: Sequence[Binding], numbers_by_value: bool = False) -> list[Row]:
    return [tuple(sorted(term_key(term, numbers_by_value) for term in row.values())) for row in rows]


def recall(gold: Row, predicted: Row) -> float:
    """The share of *gold*'s values (as a multiset) that *predicted* holds."""
    if not gold:
        return 0.0
    return _overlap(gold, predicted) / len(gold)


def _overlap(gold: Row, predicted: Row) -> int:
    return sum((Counter(gold) & Counter(predicted)).values())


#: Blocks with more cells than this are solved on a sparse graph instead of a dense matrix.
DENSE_CELLS = 25_000_000


def _incidence(rows: list[Row], tokens: dict[tuple[Value, int], int], grow: bool) -> csr_matrix:
    """Rows over (value, occurrence) tokens, so that a product of two incidences counts multiset overlaps."""
    row_index: list[int] = []
    column_index: list[int] = []
    for i, row in enumerate(rows):
        seen: Counter[Value] = Counter()
        for value in row:
            seen[value] += 1
            token = tokens.setdefault((value, seen[value]), len(tokens)) if grow else tokens.get((value, seen[value]))
            if token is not None:
                row_index.append(i)
                column_index.append(token)
    return csr_matrix((np.ones(len(row_index), dtype=np.int64), (row_index, column_index)),
                      shape=(len(rows), max(len(tokens), 1)))


def _weights(gold: list[Row], predicted: list[Row]) -> tuple[csr_matrix, csr_matrix]:
    """Shared-value counts of every pair that shares a value, and their integer weights.

    A pair's weight is its recall as a multiple of 1/scale, times room for a
    cost of 1 per matched pair: maximising the total then maximises the recall
    sum first and, among equal sums, takes the fewest pairs.
    """
    tokens: dict[tuple[Value, int], int] = {}
    gold_incidence = _incidence(gold, tokens, grow=True)
    predicted_incidence = _incidence(predicted, tokens, grow=False)
    overlap = (gold_incidence @ predicted_incidence.T).tocsr()
    overlap.eliminate_zeros()
    overlap.sort_indices()
    sizes = np.array([len(row) for row in gold], dtype=np.int64)
    scale = math.lcm(*{int(size) for size in sizes if size}) if sizes.any() else 1
    pair_cost_base = min(len(gold), len(predicted)) + 1
    factor = np.where(sizes > 0, scale // np.maximum(sizes, 1), 0) * pair_cost_base
    row_of = np.repeat(np.arange(len(gold)), np.diff(overlap.indptr))
    data = (overlap.data * factor[row_of] - 1).astype(np.float64)
    weights = csr_matrix((data, overlap.indices.copy(), overlap.indptr.copy()), shape=overlap.shape)
    return overlap, weights


def _solve(weights: csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """The heaviest matching of one block, as row and column indices of its pairs."""
    n, m = weights.shape
    if n * m <= DENSE_CELLS:
        matrix = weights.toarray()
        rows, columns = linear_sum_assignment(matrix, maximize=True)
        keep = matrix[rows, columns] > 0
        return rows[keep], columns[keep]
    return _solve_sparse(weights)


def _solve_sparse(weights: csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """The same optimum on a sparse graph, padded so that a full matching always exists.

    Gold row i may stay unmatched through its own dummy column m+i, predicted
    row j through dummy row n+j; dummy row n+j meets dummy column m+i wherever
    (i, j) is an edge, so the dummies of a real pair can pair up too.  Every
    cost is positive: C - weight on real edges, C on dummy ones, so the
    cheapest full matching is the heaviest real one.
    """
    n, m = weights.shape
    ceiling = weights.data.max() + 1
    real = weights.copy()
    real.data = ceiling - real.data
    dummies = weights.T.copy().tocsr()
    dummies.data = np.full_like(dummies.data, ceiling)
    graph = bmat([[real, identity(n, format="csr") * ceiling], [identity(m, format="csr") * ceiling, dummies]],
                 format="csr")
    rows, columns = min_weight_full_bipartite_matching(graph)
    keep = (rows < n) & (columns < m)
    rows, columns = rows[keep], columns[keep]
    is_edge = np.asarray(weights[rows, columns]).ravel() > 0
    return rows[is_edge], columns[is_edge]


def _assign(gold: list[Row], predicted: list[Row]) -> tuple[float, int]:
    """Best (Σ recall, matched pairs) over independent blocks of rows that share values."""
    if not gold or not predicted:
        return 0.0, 0
    overlap, weights = _weights(gold, predicted)
    if weights.nnz == 0:
        return 0.0, 0
    n, m = weights.shape
    graph = bmat([[None, weights], [weights.T, None]], format="csr")
    _, labels = connected_components(graph, directed=False)
    gold_labels, predicted_labels = labels[:n], labels[n:]
    sizes = np.array([len(row) for row in gold], dtype=np.float64)
    total, matched = 0.0, 0
    for label in np.unique(gold_labels[np.diff(weights.indptr) > 0]):
        gold_block = np.flatnonzero(gold_labels == label)
        predicted_block = np.flatnonzero(predicted_labels == label)
        rows, columns = _solve(weights[gold_block][:, predicted_block])
        gold_rows_chosen, predicted_rows_chosen = gold_block[rows], predicted_block[columns]
        shared = np.asarray(overlap[gold_rows_chosen, predicted_rows_chosen]).ravel()
        total += float((shared / sizes[gold_rows_chosen]).sum())
        matched += len(rows)
    return total, matched


def _pair_identical(gold: list[Row], predicted: list[Row]) -> tuple[list[Row], list[Row], int]:
    """Pair gold rows with identical predicted rows; what is left, and how many were paired.

    Safe when all gold rows have the same size k: for a gold row g and its twin
    p, any other partners g' and p' satisfy |g'∩g| + |g∩p'| <= k + |g'∩p'|, so
    swapping to (g, p), (g', p') never lowers the recall sum and never adds a
    matched pair.
    """
    available = Counter(predicted)
    left_gold: list[Row] = []
    paired = 0
    for row in gold:
        if row and available[row] > 0:
            available[row] -= 1
            paired += 1
        else:
            left_gold.append(row)
    left_predicted: list[Row] = []
    for row, count in available.items():
        left_predicted.extend([row] * count)
    return left_gold, left_predicted, paired


def _f1(total: float, matched: int, n_gold: int, n_predicted: int) -> float:
    tp = total
    fn = n_gold - matched + (matched - total)
    fp = n_predicted - matched
    denominator = 2 * tp + fp + fn
    return 2 * tp / denominator if denominator else 0.0


def row_major_f1(gold: Answer, predicted: Answer, numbers_by_value: bool = False) -> float:
    """The paper's row-major F1 of *predicted* against *gold* (rows, a boolean, or ``None``)."""
    if predicted is None or gold is None:
        return 0.0
    if isinstance(predicted, bool) or isinstance(gold, bool):
        return 1.0 if isinstance(predicted, bool) and isinstance(gold, bool) and predicted == gold else 0.0
    gold_set = gold_rows(gold, numbers_by_value)
    predicted_set = predicted_rows(predicted, numbers_by_value)
    if not gold_set and not predicted_set:
        return 1.0
    # A predicted value that no gold row holds can never add to any recall: leaving such values out
    # changes no score, and makes a prediction with extra columns identical to its gold row.
    useful = {value for row in gold_set for value in row}
    reduced = [tuple(value for value in row if value in useful) for row in predicted_set]
    total, matched = 0.0, 0
    if len({len(row) for row in gold_set}) == 1:
        gold_left, predicted_left, paired = _pair_identical(gold_set, reduced)
        total += paired
        matched += paired
    else:
        gold_left, predicted_left = gold_set, reduced
    block_total, block_matched = _assign(gold_left, predicted_left)
    total += block_total
    matched += block_matched
    return _f1(total, matched, len(gold_set), len(predicted_set))


def exact_match(gold: Answer, predicted: Answer, numbers_by_value: bool = False) -> bool:
    """EM: the row-major F1 is exactly 1."""
    return row_major_f1(gold, predicted, numbers_by_value) == 1.0


@dataclass(frozen=True)
class RowMajorScore:
    """One question's row-major F1 and EM (EM: F1 exactly 1)."""

    f1: float
    em: bool


@dataclass(frozen=True)
class RowMajorFigures:
    """A run's mean row-major F1 and EM, fractions in [0, 1]."""

    questions: int
    f1: float
    em: float


def score(gold: Answer, predicted: Answer, numbers_by_value: bool = False) -> RowMajorScore:
    """One question's row-major F1 and EM: the scorers' one call order, gold first."""
    f1 = row_major_f1(gold, predicted, numbers_by_value)
    return RowMajorScore(f1, f1 == 1.0)


def aggregate(scores: Iterable[RowMajorScore]) -> RowMajorFigures:
    """The mean F1 and EM over questions."""
    scores = list(scores)
    if not scores:
        raise ValueError("no questions to score")
    return RowMajorFigures(len(scores), sum(s.f1 for s in scores) / len(scores),
                           sum(s.em for s in scores) / len(scores))
