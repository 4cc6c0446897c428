"""The LoCoMo benchmark script on a tiny hand-made conversation (the real data is not shipped)."""

from __future__ import annotations

import json
import math

import pytest
from benchmarks import locomo
from benchmarks._locomo_data import load, parse_date
from benchmarks._metrics import ndcg, summarize

SAMPLE = [
    {
        "sample_id": "tiny-1",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a puppy named Biscuit."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! I started learning violin."},
            ],
            "session_2_date_time": "10:00 am on 20 June, 2023",
            "session_2": [
                {"speaker": "Ben", "dia_id": "D2:1", "text": "My violin recital went well."},
                {"speaker": "Ana", "dia_id": "D2:2", "text": "Biscuit chewed my shoes again."},
                {"speaker": "Ben", "dia_id": "D2:3", "text": "Ha, how is work going?"},
                {"speaker": "Ana", "dia_id": "D2:4", "text": "Busy with the new project."},
                {"speaker": "Ben", "dia_id": "D2:5", "text": "Good luck, talk soon!"},
                {"speaker": "Ana", "dia_id": "D2:6", "text": "Thanks, see you next week."},
            ],
        },
        "qa": [
            {"question": "What is the name of Ana's puppy?", "evidence": ["D1:1"], "category": 4},
            {
                "question": "How is Ben doing with violin?",
                "evidence": ["D1:2; D2:1"],
                "category": 1,
            },
            {"question": "Unanswerable?", "evidence": ["D1:1"], "category": 5},
        ],
    }
]


def test_parse_date_and_loader(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(SAMPLE))
    (conv,) = load(path)
    assert parse_date("1:56 pm on 8 May, 2023").isoformat() == "2023-05-08T13:56:00+00:00"
    assert [t.dia_id for t in conv.turns][:4] == ["D1:1", "D1:2", "D2:1", "D2:2"]
    assert [q.evidence for q in conv.questions] == [("D1:1",), ("D1:2", "D2:1")]


def test_metrics_by_hand() -> None:
    assert ndcg(["x", "a"], {"a"}) == pytest.approx(1 / math.log2(3))
    summary = summarize([(4, ["a", "b"], {"a"}), (1, ["c"], {"b", "c"})], [1.0, 3.0])
    assert summary["recall_any@1"] == 1.0 and summary["recall_all@1"] == 0.5
    assert summary["recall_any@10_by_category"] == {"1": 1.0, "4": 1.0}
    assert summary["latency_median_ms"] == 2.0


def test_benchmark_runs_through_the_public_api(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    path, out = tmp_path / "tiny.json", tmp_path / "out.json"
    path.write_text(json.dumps(SAMPLE))
    assert locomo.main([str(path), "--no-vectors", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["bm25"]["questions"] == 2 and report["bm25"]["turns"] == 8
    assert report["bm25"]["recall_any@1"] == 1.0
    assert report["bm25"]["recall_all@5"] == 1.0
    assert "markus_keyword" in report and "hybrid" not in report
    assert "recall_any@10_vs_markus" in report["bm25"]
    assert "bm25" in capsys.readouterr().out


def test_breakdown_by_conversation_and_category() -> None:
    from benchmarks._locomo_tables import breakdown, format_breakdown

    results = [
        ("c1", 4, ["a"], {"a"}),
        ("c1", 1, ["x"], {"a", "b"}),
        ("c2", 4, ["b", "a"], {"a", "b"}),
    ]
    rows = {row[0]: row[1:] for row in breakdown(results)}
    assert rows["c1"] == (0.5, 0.5, 2) and rows["c2"] == (1.0, 1.0, 1)
    assert rows["single-hop"] == (1.0, 1.0, 2) and rows["multi-hop"] == (0.0, 0.0, 1)
    assert rows["all"][2] == 3
    assert "c2" in format_breakdown({"run": results})


def test_leave_one_out_tunes_on_the_others_and_scores_the_one_left_out() -> None:
    from benchmarks._locomo_tables import format_folds, leave_one_out

    convs = ["c1", "c2", "c3", "c4"]

    # Value 1 finds the evidence in c1, c2 and c3; value 0 only in c4.
    def score(value: object) -> list:
        return [
            (conv, 4, ["e"] if (value == 1) != (conv == "c4") else ["x"], {"e"}) for conv in convs
        ]

    folds = {f.held_out: f for f in leave_one_out(convs, [0, 1], 0, score)}
    assert folds["c1"].chosen == 1 and folds["c1"].any10 == 1.0
    assert folds["c1"].default_any10 == 0.0
    # Tuned on c1-c3, value 1 wins there and then misses on c4: LOO shows it.
    assert folds["c4"].chosen == 1 and folds["c4"].any10 == 0.0
    assert folds["c4"].default_any10 == 1.0
    assert "pooled" in format_folds("knob", list(folds.values()))


def test_benchmark_prints_per_conversation_table_and_loo(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    path, out = tmp_path / "tiny.json", tmp_path / "out.json"
    path.write_text(json.dumps(SAMPLE))
    assert locomo.main([str(path), "--no-vectors", "--loo", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "tiny-1" in printed and "LOO date_boost" in printed
    report = json.loads(out.read_text())
    assert report["by_conversation"]["bm25"]["tiny-1"] == [1.0, 1.0]


def test_time_stage_benchmark_compares_the_same_answers(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from benchmarks import bench_time_stage

    sample = json.loads(json.dumps(SAMPLE))
    sample[0]["qa"].append(
        {"question": "What did Ben say on 20 June, 2023?", "evidence": ["D2:1"], "category": 2}
    )
    path = tmp_path / "dated.json"
    path.write_text(json.dumps(sample))
    assert bench_time_stage.main([str(path), "--rounds", "2"]) == 0
    out = capsys.readouterr().out
    assert "SQLite: 1 questions naming a time, 2 rounds" in out
    assert "the same hits and scores for 2/2" in out


def test_vector_lists_benchmark_reads_everything_through_one_list(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("onnxruntime", reason="the [semantic] extra is not installed")
    from benchmarks import bench_vector_lists

    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(SAMPLE))
    assert bench_vector_lists.main([str(path), "--lists", "1", "4"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0] == "8 turns, 2 questions, MiniLM; recall@10 through the lists"
    # One list holds every turn: reading it is the exact search (8 turns: 8 of the 10 slots).
    assert rows[2].split() == ["1", "0.800", "0.800", "0.800", "0.800"]
    four = [float(cell) for cell in rows[3].split()[1:]]
    assert all(0.0 < value <= 0.8 for value in four) and four == sorted(four)


def test_benchmark_on_postgresql_leaves_the_server_as_it_found_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Each run records into a schema of its own and drops it: its agents' ids are the same
    every run, so recording into the database's own schema doubled every conversation on the
    second run and lowered the figures."""
    from tests.postgres_support import _server_url

    url = _server_url()
    psycopg = pytest.importorskip("psycopg")
    path, out = tmp_path / "tiny.json", tmp_path / "out.json"
    path.write_text(json.dumps(SAMPLE))

    def schemas() -> set[str]:
        with psycopg.connect(url, autocommit=True) as conn:
            return {r[0] for r in conn.execute("SELECT nspname FROM pg_namespace")}

    def tables_here() -> int:
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
            ).fetchone()
        return int(row[0])

    before, tables = schemas(), tables_here()
    reports = []
    for _ in range(2):
        assert (
            locomo.main([str(path), "--out", str(out), "--no-vectors", "--database-url", url]) == 0
        )
        reports.append(json.loads(out.read_text()))
    assert schemas() == before and tables_here() == tables

    def figures(report: dict) -> dict:  # type: ignore[type-arg]
        return {k: v for k, v in report["bm25"].items() if "ms" not in k and "seconds" not in k}

    assert figures(reports[0]) == figures(reports[1])


def test_ceilings_count_what_each_choice_of_setting_finds() -> None:
    from benchmarks.locomo_ceiling import ceilings

    # Three questions with evidence (one of each kind), one without: it is not counted.
    # Setting "a" finds q1 and q3, "b" finds q2 only, "c" finds q1 and the multi-hop q2.
    def run(found: set[str]) -> list:
        rows = [("c", 4, "q1"), ("c", 1, "q2"), ("c", 4, "q3"), ("c", 4, "")]
        return [
            (conv, cat, [q] if q in found else ["x"], {q} if q else set()) for conv, cat, q in rows
        ]

    runs = {("a",): run({"q1", "q3"}), ("b",): run({"q2"}), ("c",): run({"q1", "q2"})}
    assert ceilings(runs) == {
        "defaults": 2 / 3,
        "best setting": 2 / 3,
        "best per category": 1.0,  # "a" for single-hop, "b" or "c" for multi-hop
        "best per question": 1.0,
    }
    runs = {("b",): run({"q2"}), ("a",): run({"q1"})}
    assert ceilings(runs) == {
        "defaults": 1 / 3,
        "best setting": 1 / 3,
        "best per category": 2 / 3,
        "best per question": 2 / 3,
    }


def test_ceiling_benchmark_runs_on_the_engine(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from benchmarks import locomo_ceiling

    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(SAMPLE))
    assert locomo_ceiling.main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "defaults, recall_all@k: @10 1.000" in out
    assert "recall_all@10, best per question: 1.000" in out
