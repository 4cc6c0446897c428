from __future__ import annotations

import string

from markus_memory.config import rand36


def test_rand36_is_n_base36_characters_and_varies() -> None:
    draws = {rand36(6) for _ in range(50)}
    assert all(len(d) == 6 and set(d) <= set(string.digits + string.ascii_lowercase) for d in draws)
    assert len(draws) > 1
    assert rand36(0) == ""
