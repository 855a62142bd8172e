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
the same number of values, a gold row identical to a predicted row is paired
with it first: no other partner can do better (see :func:`_pair_identical`).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import min_weight_full_bipartite_matching

from agent.kb.base import Binding

Answer = Sequence[Binding] | bool | None
Value = tuple[str, str, str, str]
Row = tuple[Value, ...]


def _term(term: dict[str, str]) -> Value:
    return (term.get("type", ""), term.get("value", ""), term.get("xml:lang", ""), term.get("datatype", ""))


def _ignored(name: str) -> bool:
    return name.endswith("Label") or name.endswith("Description")


def gold_rows(rows: Sequence[Binding]) -> list[Row]:
    return [tuple(sorted(_term(term) for name, term in row.items() if not _ignored(name))) for row in rows]


def predicted_rows(rows: Sequence[Binding]) -> list[Row]:
    return [tuple(sorted(_term(term) for term in row.values())) for row in rows]


def recall(gold: Row, predicted: Row) -> float:
    """The share of *gold*'s values (as a multiset) that *predicted* holds."""
    if not gold:
        return 0.0
    return _overlap(gold, predicted) / len(gold)


def _overlap(gold: Row, predicted: Row) -> int:
    return sum((Counter(gold) & Counter(predicted)).values())


#: Blocks with more cells than this are solved on a sparse graph instead of a dense matrix.
DENSE_CELLS = 250_000


def _weights(gold: list[Row], predicted: list[Row]) -> tuple[dict[tuple[int, int], int], int]:
    """Integer weights of the pairs that share a value, and the divisor that turns a weight back into recall.

    A pair's weight is its recall as a multiple of 1/scale, times room for a
    cost of 1 per matched pair: maximising the total then maximises the recall
    sum first and, among equal sums, takes the fewest pairs.
    """
    sizes = {len(row) for row in gold if row}
    scale = math.lcm(*sizes) if sizes else 1
    pair_cost_base = min(len(gold), len(predicted)) + 1
    holders: dict[Value, list[tuple[int, int]]] = defaultdict(list)
    for j, row in enumerate(predicted):
        for value, count in Counter(row).items():
            holders[value].append((j, count))
    weights: dict[tuple[int, int], int] = {}
    for i, row in enumerate(gold):
        shared: dict[int, int] = defaultdict(int)
        for value, count in Counter(row).items():
            for j, held in holders.get(value, ()):
                shared[j] += min(count, held)
        for j, overlap in shared.items():
            weights[i, j] = overlap * (scale // len(row)) * pair_cost_base - 1
    return weights, scale * pair_cost_base


def _assign(gold: list[Row], predicted: list[Row]) -> tuple[float, int]:
    """Best (Σ recall, matched pairs) for one block."""
    weights, _ = _weights(gold, predicted)
    if not weights:
        return 0.0, 0
    if len(gold) * len(predicted) <= DENSE_CELLS:
        pairs = _solve_dense(weights, len(gold), len(predicted))
    else:
        pairs = _solve_sparse(weights, len(gold), len(predicted))
    return sum(recall(gold[i], predicted[j]) for i, j in pairs), len(pairs)


def _solve_dense(weights: dict[tuple[int, int], int], n: int, m: int) -> list[tuple[int, int]]:
    matrix = np.zeros((n, m))
    for (i, j), weight in weights.items():
        matrix[i, j] = weight
    rows, columns = linear_sum_assignment(matrix, maximize=True)
    return [(int(i), int(j)) for i, j in zip(rows, columns) if matrix[i, j] > 0]


def _solve_sparse(weights: dict[tuple[int, int], int], n: int, m: int) -> list[tuple[int, int]]:
    """The same optimum on a sparse graph, padded so that a full matching always exists.

    Gold row i may stay unmatched through its own dummy column m+i, predicted
    row j through dummy row n+j; dummy row n+j meets dummy column m+i wherever
    (i, j) is an edge, so the dummies of a real pair can pair up too.  Every
    cost is positive: C - weight on real edges, C on dummy ones, so the
    cheapest full matching is the heaviest real one.
    """
    ceiling = max(weights.values()) + 1
    rows, columns, costs = [], [], []
    for (i, j), weight in weights.items():
        rows += [i, n + j]
        columns += [j, m + i]
        costs += [ceiling - weight, ceiling]
    rows += list(range(n)) + list(range(n, n + m))
    columns += list(range(m, m + n)) + list(range(m))
    costs += [ceiling] * (n + m)
    graph = csr_matrix((np.array(costs, dtype=np.float64), (rows, columns)), shape=(n + m, n + m))
    matched = min_weight_full_bipartite_matching(graph)
    return [(i, int(matched[i])) for i in range(n) if matched[i] < m and (i, int(matched[i])) in weights]


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


def _blocks(gold: list[Row], predicted: list[Row]) -> list[tuple[list[int], list[int]]]:
    """Connected components of gold and predicted rows linked by a shared value."""
    parent = list(range(len(gold) + len(predicted)))

    def find(node: int) -> int:
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    owner: dict[Value, int] = {}
    for index, row in enumerate(gold):
        for value in row:
            if value in owner:
                parent[find(index)] = find(owner[value])
            else:
                owner[value] = index
    for offset, row in enumerate(predicted):
        node = len(gold) + offset
        for value in row:
            if value in owner:
                parent[find(node)] = find(owner[value])
    groups: dict[int, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    for index in range(len(gold)):
        groups[find(index)][0].append(index)
    for offset in range(len(predicted)):
        groups[find(len(gold) + offset)][1].append(offset)
    return [group for group in groups.values() if group[0] and group[1]]


def _f1(total: float, matched: int, n_gold: int, n_predicted: int) -> float:
    tp = total
    fn = n_gold - matched + (matched - total)
    fp = n_predicted - matched
    denominator = 2 * tp + fp + fn
    return 2 * tp / denominator if denominator else 0.0


def row_major_f1(predicted: Answer, gold: Answer) -> float:
    """The paper's row-major F1 of *predicted* against *gold* (rows, a boolean, or ``None``)."""
    if predicted is None or gold is None:
        return 0.0
    if isinstance(predicted, bool) or isinstance(gold, bool):
        return 1.0 if isinstance(predicted, bool) and isinstance(gold, bool) and predicted == gold else 0.0
    gold_set, predicted_set = gold_rows(gold), predicted_rows(predicted)
    if not gold_set and not predicted_set:
        return 1.0
    total, matched = 0.0, 0
    if len({len(row) for row in gold_set}) == 1:
        gold_left, predicted_left, paired = _pair_identical(gold_set, predicted_set)
        total += paired
        matched += paired
    else:
        gold_left, predicted_left = gold_set, predicted_set
    for gold_indices, predicted_indices in _blocks(gold_left, predicted_left):
        block_total, block_matched = _assign([gold_left[i] for i in gold_indices],
                                             [predicted_left[j] for j in predicted_indices])
        total += block_total
        matched += block_matched
    return _f1(total, matched, len(gold_set), len(predicted_set))


def exact_match(predicted: Answer, gold: Answer) -> bool:
    """EM: the row-major F1 is exactly 1."""
    return row_major_f1(predicted, gold) == 1.0
