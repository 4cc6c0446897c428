from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from markus_memory._markdown import (
    Section,
    escape_body,
    h2_name,
    join_h2,
    meta_line,
    sanitize_h2,
    split_h2,
    unescape_body,
)

TRICKY_LINES = [
    "## x",
    "### obs_1 fake",
    "<!-- managed: cpp -->",
    "<!-- type: fact -->",
    "<!-- updated: 2020-01-01T00:00:00.000Z -->",
    "\\## already escaped",
    "\\",
    "$1 \\1 $& $'",
    "line\r",
    "\ttab",
    "😀 漢字 かな",
    "",
    "#",
    "##",
    "## ",
]

lines = st.one_of(
    st.sampled_from(TRICKY_LINES), st.text(alphabet=st.characters(blacklist_characters="\n"))
)
texts = st.lists(lines, max_size=12).map("\n".join)


@given(texts)
def test_escape_round_trips_any_text(text: str) -> None:
    assert unescape_body(escape_body(text)) == text


@given(texts)
def test_escaped_text_has_no_structural_lines(text: str) -> None:
    for line in escape_body(text).split("\n"):
        assert h2_name(line) is None
        assert meta_line(line) is None
        assert not line.startswith("#")


@given(st.one_of(texts, st.text()))
def test_split_h2_is_lossless(text: str) -> None:
    preamble, sections = split_h2(text)
    assert join_h2(preamble, sections) == text


def test_split_h2_finds_whole_heading_lines_only() -> None:
    text = "# K\n\n## procedures\nsee ## not a heading\n### sub\n## b\r\nx"
    preamble, sections = split_h2(text)
    assert preamble == "# K\n\n"
    assert [s.name for s in sections] == ["procedures", "b"]
    assert sections[0].body == "see ## not a heading\n### sub\n"


def test_section_build_renders_heading_and_body() -> None:
    assert Section.build("a", "body").render() == "## a\nbody\n"


def test_sanitize_h2_demotes_only_h2_line_starts() -> None:
    assert sanitize_h2("## Key Lessons\nbody ## x\n### y") == "### Key Lessons\nbody ## x\n### y"


def test_meta_line_is_exact() -> None:
    assert meta_line("<!-- managed: cpp -->") == ("managed", "cpp")
    assert meta_line("<!-- managed: cpp -->\r") == ("managed", "cpp")
    assert meta_line(" <!-- managed: cpp -->") is None
    assert meta_line("<!-- managed: cpp --> x") is None
