"""``python -m scripts.bench_serve`` with tiny numbers: its own server, its three tables, and clients that leave.

The figures themselves are the bench's to report; here, that every table has
its rows, that no question is lost between answered and refused, and that a
run whose asker left made fewer model calls than a full run.
"""

from __future__ import annotations

import re

from scripts import bench_serve


def rows(output: str, heading: str) -> dict[str, list[str]]:
    """The table under the header line starting with *heading*: its rows' cells, by their first cells joined."""
    lines = output.splitlines()
    start = next(index for index, line in enumerate(lines) if line.startswith(f"| {heading}"))
    table = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        table[cells[0] if heading != "users at once" else f"{cells[0]} {cells[1]}"] = cells
    return table


def test_the_bench_runs_its_own_server_and_reports_each_table(capsys):
    code = bench_serve.main(["--model-delay", "0.05", "--users", "2", "3", "--repeat", "2"])
    printed = capsys.readouterr()
    assert code == 0, printed.err

    alone = rows(printed.out, "one at a time")["alone"]
    assert alone[1:3] == ["2", "2"], alone  # both questions answered
    assert re.fullmatch(r"[\d.]+ / [\d.]+", alone[3]) and re.fullmatch(r"[\d.]+ / [\d.]+", alone[4])

    users = rows(printed.out, "users at once")
    assert set(users) == {"2 own address each", "2 one address", "3 own address each", "3 one address"}
    for name, cells in users.items():
        count, answered, other = int(cells[0]), int(cells[2]), int(cells[4])
        refused = sum(int(n) for n in re.findall(r"(\d+) × \d{3}", cells[3]))
        assert answered + refused + other == count, f"{name}: questions lost: {cells}"
        assert answered >= 2 and other == 0, f"{name}: {cells}"
        assert re.fullmatch(r"[\d.]+ / [\d.]+ / [\d.]+", cells[5]), cells
    assert users["3 own address each"][2] == "3", "a question refused though each came from its own address"

    leaving = rows(printed.out, "2 clients leave after their first step")
    assert leaving["left after their first step"][1] == "2 of 2"
    full = int(leaving["model calls of a full run"][1])
    abandoned = [int(n) for n in leaving["model calls of each abandoned run"][1].split(", ")]
    assert full == 3 and len(abandoned) == 2 and all(calls < full for calls in abandoned), leaving
    assert float(leaving["worker seconds freed (delay × model calls not made)"][1]) > 0
    assert leaving["next question: answer s (answered)"][1] != "–"

    progress = printed.err.splitlines()
    assert any(line.startswith("one question at a time") for line in progress)
    assert any(line.startswith("3 users at once, one address") for line in progress)
    assert any(line.startswith("2 clients leave") for line in progress)


def test_an_address_without_a_graph_is_one_line(capsys):
    assert bench_serve.main(["http://127.0.0.1:9"]) == 2
    assert capsys.readouterr().err == "error: --graph is needed with a server's address (the graph to ask)\n"
