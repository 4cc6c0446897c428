"""The repository stands alone: no tracked file points at design notes outside it.

A user's clone has only the repository, so code, tests and docs describe the original Markus
behaviour in words and point at ``docs/`` for the design. ``.ci/run`` is exempt: CI may fetch
the benchmark data from beside the checkout.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXEMPT = {".ci/run"}
# Built from pieces so that this file does not match itself.
FORBIDDEN = ("../" + "shared", "shared" + "/design", "REFERENCE" + " §", "REFERENCE" + ".md")
# A bare section number (the section sign, then digits) points at the same outside notes.
SECTION_NUMBER = re.compile("§" + r"\s*\d")


def tracked_files() -> list[str]:
    try:
        listing = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [name for name in listing.decode().split("\0") if name and name not in EXEMPT]


def offending_lines(text: str) -> list[str]:
    return [
        line
        for line in text.splitlines()
        if any(word in line for word in FORBIDDEN) or SECTION_NUMBER.search(line)
    ]


def test_the_check_recognises_each_outside_pointer() -> None:
    for word in FORBIDDEN:
        assert offending_lines(f"see {word} for details") == [f"see {word} for details"]
    assert offending_lines("fixed as " + "§" + "14.1 item 8 asks") != []
    assert offending_lines("FOREIGN KEY REFERENCES agents(id)") == []
    assert offending_lines("a token such as " + "§" + " alone") == []


def test_no_tracked_file_points_outside_the_repository() -> None:
    found = []
    for name in tracked_files():
        path = ROOT / name
        if not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:  # a binary file (an image) holds no prose
            continue
        text = data.decode("utf-8", errors="replace")
        found += [f"{name}: {line.strip()}" for line in offending_lines(text)]
    assert found == [], "\n".join(found)
