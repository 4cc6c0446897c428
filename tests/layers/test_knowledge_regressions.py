"""Regression tests for the weak spots of the original knowledge.md; bad input."""

from __future__ import annotations

import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings

from markus_memory._markdown import sanitize_h2
from markus_memory.errors import CorruptFileError, InvalidIdError, InvalidInputError
from markus_memory.layers.knowledge import KnowledgeFile, Observation

from .knowledge_support import StepClock, make_knowledge
from .test_knowledge_format import texts

UTC = timezone.utc


def fresh(root: Path, year: int = 2030) -> KnowledgeFile:
    return make_knowledge(root, StepClock(datetime(year, 1, 1, tzinfo=UTC)))


def test_new_section_above_observations(kf: KnowledgeFile, root: Path) -> None:
    kf.save_observation("first observation")
    assert kf.update_section("brand-new", "visible body").ok
    text = kf.text()
    assert text.index("## brand-new") < text.index("## _observations")
    kf.save_observation("second observation")
    reread = fresh(root)
    assert reread.section("brand-new") == "visible body"
    assert "visible body" in reread.curated_text()
    assert len(reread.observations()) == 2


def test_section_hand_written_after_the_block_is_kept(kf: KnowledgeFile, root: Path) -> None:
    kf.save_observation("obs")
    with open(root / "knowledge.md", "a") as handle:
        handle.write("\n## written-by-a-person\nimportant\n")
    assert kf.section("written-by-a-person") == "important"
    kf.save_observation("another")
    text = kf.text()
    assert "## written-by-a-person\nimportant" in text
    assert text.index("## written-by-a-person") < text.index("## _observations")


def test_section_names_match_whole_heading_lines(kf: KnowledgeFile) -> None:
    kf.update_section("procedures", "intro\n### Key Lessons\nsub body\nmore")
    kf.update_section("Key Lessons", "top-level lessons")
    assert kf.section("procedures") == "intro\n### Key Lessons\nsub body\nmore"
    assert kf.section("Key Lessons") == "top-level lessons"
    assert kf.section("proc") is None
    assert kf.update_section("proc", "short name").ok
    assert kf.section("proc") == "short name"
    assert kf.section("procedures") == "intro\n### Key Lessons\nsub body\nmore"
    assert [s.name for s in kf.sections()] == ["procedures", "Key Lessons", "proc"]


@pytest.mark.parametrize("content", ["costs $1", "$& and $' and $`", "\\1 \\g<0> \\\\", "$$"])
def test_replacement_patterns_are_stored_verbatim(kf: KnowledgeFile, content: str) -> None:
    kf.update_section("a", "alpha")
    kf.update_section("b", "beta")
    kf.update_section("a", content)
    kf.update_section("c", content)
    assert kf.section("a") == content and kf.section("c") == content
    assert kf.section("b") == "beta"
    assert kf.text().count("alpha") == 0 and kf.text().count("beta") == 1


def test_caps_apply_to_the_curated_part_only(kf: KnowledgeFile, root: Path) -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    kf.add_observations(
        Observation(f"o{i}", "fact", f"observation {i} " + "w" * 80, start) for i in range(500)
    )
    block = kf.text()[kf.text().index("## _observations") :]
    assert len(kf.text()) > 40_000
    result = kf.update_section("procedures", "p" * 2900)
    assert result.ok and result.curated_chars < 3000
    assert kf.text().endswith(block)
    assert len(fresh(root).observations()) == 500


def test_observation_content_with_structure_round_trips(kf: KnowledgeFile, root: Path) -> None:
    content = (
        "saw this:\n### obs_1718000000000_fake\n## Injected Section\n<!-- type: fact -->\n"
        "<!-- at: 2000-01-01T00:00:00.000Z -->\n\\## escaped already"
    )
    kf.update_section("real", "body")
    obs = kf.save_observation(content, "insight", ["t"])
    reread = fresh(root)
    assert reread.observations() == [obs]
    assert [s.name for s in reread.sections()] == ["real"]


def test_block_without_header_comments_parses_ids(root: Path) -> None:
    (root / "knowledge.md").write_text(
        "## _observations\n### obs_1718000000000_abc123\n<!-- type: fact -->\nfirst\n\n"
        "### second-id\nsecond\n"
    )
    kf = make_knowledge(root)
    assert [o.id for o in kf.observations()] == ["obs_1718000000000_abc123", "second-id"]
    kf.save_observation("third")
    text = kf.text()
    assert "### ###" not in text and "### obs_1718000000000_abc123\n" in text


def test_timestamps_are_persisted_for_any_id(kf: KnowledgeFile, root: Path) -> None:
    when = datetime(2024, 3, 4, 5, 6, 7, 891_000, tzinfo=UTC)
    kf.save_observation("merged", "insight", id="merged_abc", timestamp=when)
    kf.save_observation("compact", "note", id="compact_summary", timestamp=when)
    assert [o.timestamp for o in fresh(root, 2031).observations()] == [when, when]
    assert [o.timestamp for o in fresh(root, 2040).observations()] == [when, when]


def test_original_files_get_stable_times(root: Path) -> None:
    (root / "knowledge.md").write_text(
        "## _observations\n<!-- a -->\n<!-- b -->\n\n### obs_1718000000000_k3j9qz\n"
        "<!-- type: fact -->\nfrom id\n\n### mem-legacy\n<!-- type: note -->\nno time\n"
    )
    first = fresh(root, 2031).observations()
    second = fresh(root, 2040).observations()
    assert first == second
    assert first[0].timestamp == datetime(2024, 6, 10, 6, 13, 20, tzinfo=UTC)
    assert first[1].timestamp.year < 2031
    make_knowledge(root).save_observation("persist everything")
    assert fresh(root, 2050).observations()[:2] == first


def test_file_starting_with_observations_has_no_curated_part(root: Path) -> None:
    (root / "knowledge.md").write_text(
        "## _observations\n<!-- a -->\n<!-- b -->\n\n### obs_1\n<!-- type: fact -->\nsecret\n"
    )
    kf = make_knowledge(root)
    assert kf.curated_text() == ""
    assert kf.sections() == []
    assert [o.content for o in kf.observations()] == ["secret"]


def test_hand_edit_of_the_block_survives_the_next_save(kf: KnowledgeFile, root: Path) -> None:
    first = kf.save_observation("original text")
    second = kf.save_observation("to be deleted by hand")
    assert len(kf.observations()) == 2  # the parse cache is now warm
    path = root / "knowledge.md"
    text = path.read_text()
    edited = text.replace("original text", "edited text!").replace(
        f"### {second.id}\n", "### gone\n"
    )
    edited = edited[: edited.index("### gone")]
    path.write_text(edited)
    kf.save_observation("third")
    contents = [o.content for o in fresh(root).observations()]
    assert contents == ["edited text!", "third"]
    assert first.id in path.read_text()


def test_same_size_edit_with_restored_mtime_is_not_overwritten(
    kf: KnowledgeFile, root: Path
) -> None:
    kf.save_observation("aaaa")
    kf.observations()
    path = root / "knowledge.md"
    stat = os.stat(path)
    with open(path, "r+") as handle:  # in place: same inode, same size
        text = handle.read()
        handle.seek(0)
        handle.write(text.replace("aaaa", "bbbb"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    kf.save_observation("next")
    assert [o.content for o in fresh(root).observations()] == ["bbbb", "next"]


# ---- round trips through the file ------------------------------------------------------


def encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@settings(max_examples=60, deadline=None)
@given(texts)
def test_any_observation_content_survives_save_and_reload(content: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        kf = make_knowledge(Path(tmp))
        kf.update_section("before", "b")
        if not content.strip() or not encodable(content):
            with pytest.raises(InvalidInputError):
                kf.save_observation(content)
            return
        saved = kf.save_observation(content, "fact", ["x"])
        kf.save_observation("after")
        reread = fresh(Path(tmp)).observations()
        assert reread[0] == saved and reread[0].content == content.strip()
        assert fresh(Path(tmp)).section("before") == "b"


@settings(max_examples=60, deadline=None)
@given(texts)
def test_any_section_content_survives_write_and_reload(content: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        kf = make_knowledge(Path(tmp))
        kf.save_observation("obs")
        if not encodable(content):
            with pytest.raises(InvalidInputError):
                kf.update_section("one", content)
            return
        kf.update_section("one", content)
        kf.update_section("two", "second")
        reread = fresh(Path(tmp))
        assert reread.section("one") == sanitize_h2(content).strip()
        assert reread.section("two") == "second"
        assert [o.content for o in reread.observations()] == ["obs"]


# ---- bad input: a documented error or a refusal, and the bytes on disk do not change ----


BAD_SAVES: list[tuple[object, object]] = [
    (["an", "array"], ()),
    ({"content": "x"}, ()),
    (None, ()),
    (42, ()),
    ("", ()),
    ("   \n\t ", ()),
    ("x" * 10_000_000, ()),
    ("ok", "a,b"),
    ("ok", ["a,b"]),
    ("ok", ["line\nbreak"]),
    ("ok", ["x-->"]),
    ("ok", [3]),
    ("ok", 5),
    ("lone surrogate \ud800", ()),
    ("ok", ["\udfff"]),
]


@pytest.mark.parametrize(("content", "tags"), BAD_SAVES)
def test_bad_observation_input_is_refused_and_writes_nothing(
    kf: KnowledgeFile, root: Path, content: object, tags: object
) -> None:
    kf.save_observation("existing")
    before = (root / "knowledge.md").read_bytes()
    with pytest.raises(InvalidInputError):
        kf.save_observation(content, "fact", tags)  # type: ignore[arg-type]
    assert (root / "knowledge.md").read_bytes() == before


@pytest.mark.parametrize("bad_id", ["", "two words", "new\nline", 7, "x" * 129])
def test_bad_observation_ids_are_refused(kf: KnowledgeFile, bad_id: object) -> None:
    with pytest.raises(InvalidInputError):
        kf.save_observation("x", id=bad_id)  # type: ignore[arg-type]
    assert not kf.exists()


@pytest.mark.parametrize(
    ("name", "content", "mode"),
    [
        ("", "x", "replace"),
        ("a\nb", "x", "replace"),
        (" padded", "x", "replace"),
        ("_observations", "x", "replace"),
        (None, "x", "replace"),
        ("ok", None, "replace"),
        ("ok", ["x"], "replace"),
        ("ok", "x", "delete"),
        ("ok", "x", None),
        ("bad\ud800", "x", "replace"),
        ("ok", "bad\ud800", "replace"),
    ],
)
def test_bad_section_input_raises_and_writes_nothing(
    kf: KnowledgeFile, root: Path, name: object, content: object, mode: object
) -> None:
    kf.update_section("ok", "kept")
    before = (root / "knowledge.md").read_bytes()
    with pytest.raises((InvalidInputError, InvalidIdError)):
        kf.update_section(name, content, mode)  # type: ignore[arg-type]
    assert (root / "knowledge.md").read_bytes() == before


def test_ten_megabyte_section_is_refused_and_writes_nothing(kf: KnowledgeFile, root: Path) -> None:
    kf.update_section("ok", "kept")
    before = (root / "knowledge.md").read_bytes()
    result = kf.update_section("ok", "m" * 10_000_000, mode="patch")
    assert not result.ok and result.section_chars > 10_000_000
    assert (root / "knowledge.md").read_bytes() == before


def test_remove_with_a_single_string_is_refused(kf: KnowledgeFile) -> None:
    kf.save_observation("x", id="x")
    with pytest.raises(InvalidInputError):
        kf.remove_observations("x")
    assert [o.id for o in kf.observations()] == ["x"]


@pytest.mark.parametrize("limit", [-1, "3", 1.5])
def test_bad_limit_is_refused(kf: KnowledgeFile, limit: object) -> None:
    with pytest.raises(InvalidInputError):
        kf.observations(limit=limit)  # type: ignore[arg-type]


def test_invalid_utf8_file_raises_corrupt_and_is_left_untouched(root: Path) -> None:
    path = root / "knowledge.md"
    data = b"# Knowledge\n\n## a\nbad \xff\xfe bytes\n"
    path.write_bytes(data)
    kf = make_knowledge(root)
    for action in (
        kf.observations,
        kf.sections,
        lambda: kf.save_observation("x"),
        lambda: kf.update_section("a", "y"),
        lambda: kf.remove_observations(["x"]),
        lambda: kf.add_observations([Observation("i", "fact", "c", datetime.now(UTC))]),
    ):
        with pytest.raises(CorruptFileError):
            action()
    assert path.read_bytes() == data
