"""The LongMemEval benchmark script on a tiny hand-made file (the real data is not shipped)."""

from __future__ import annotations

import gzip
import json

import pytest
from benchmarks import longmemeval
from benchmarks._longmemeval_data import load, parse_date, scored


def _item(question_id: str, question_type: str, question: str) -> dict[str, object]:
    return {
        "question_id": question_id,
        "question_type": question_type,
        "question": question,
        "question_date": "2023/06/01 (Thu) 09:00",
        "answer": "-",
        "answer_session_ids": ["s-car"],
        # Out of date order on purpose: the loader sorts the sessions by date.
        "haystack_dates": ["2023/05/20 (Sat) 10:00", "2023/05/02 (Tue) 08:30"],
        "haystack_session_ids": ["s-car", "s-garden"],
        "haystack_sessions": [
            [
                {
                    "role": "user",
                    "content": "I finally bought a red Honda Civic.",
                    "has_answer": True,
                },
                {"role": "assistant", "content": "Congratulations on the new car!"},
            ],
            [
                {"role": "user", "content": "My tomatoes are growing in the garden."},
                {"role": "assistant", "content": "Tomatoes like full sun and steady water."},
            ],
        ],
    }


SAMPLE = [
    _item("q1", "single-session-user", "What car did I buy?"),
    _item("q2_abs", "single-session-user", "What boat did I buy?"),
]


@pytest.fixture
def data(tmp_path):  # type: ignore[no-untyped-def]
    path = tmp_path / "lme.json.gz"
    path.write_bytes(gzip.compress(json.dumps(SAMPLE).encode()))
    return path


def test_loader_orders_sessions_by_date_and_marks_evidence(data) -> None:  # type: ignore[no-untyped-def]
    first, abstention = load(data)
    assert parse_date("2023/05/20 (Sat) 10:00").isoformat() == "2023-05-20T10:00:00+00:00"
    assert [t.id for t in first.turns] == ["s-garden#0", "s-garden#1", "s-car#0", "s-car#1"]
    assert first.evidence == {"s-car#0"} and first.answer_sessions == {"s-car"}
    assert scored(first) and not scored(abstention)


def test_metrics_by_hand(data) -> None:  # type: ignore[no-untyped-def]
    question = load(data)[0]
    perfect = longmemeval.score(question, ["s-car#0", "s-car#1"])
    assert perfect == {"all@5": 1, "all@10": 1, "any@10": 1, "ndcg@10": 1, "sess_all@5": 1}
    late = longmemeval.score(question, [f"x#{i}" for i in range(5)] + ["s-car#0"])
    assert late["all@5"] == 0 and late["all@10"] == 1 and late["sess_all@5"] == 0
    assert 0 < late["ndcg@10"] < 1


def test_halves_split_each_question_type(data) -> None:  # type: ignore[no-untyped-def]
    question = load(data)[0]
    first, second = longmemeval.halves([question] * 5)
    assert (len(first), len(second)) == (3, 2)


def test_the_script_ranks_the_evidence_first(data, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "out.json"
    args = [str(data), "--no-vectors", "--knobs", "--now", "--split-half", "--out", str(out)]
    assert longmemeval.main(args) == 0
    report = json.loads(out.read_text())
    assert report["questions"] == 1  # the abstention is not scored
    for run in ("fts5_bm25", "fts5_porter", "recall"):
        assert report["summary"][run]["all"]["all@5"] == 1.0, run
    printed = capsys.readouterr().out
    assert "single-session-user" in printed and "(half B)" in printed
    assert "short_turns  A->B: chose" in printed
