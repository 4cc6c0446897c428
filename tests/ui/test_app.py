"""The UI over real HTTP (uvicorn on a socket): the guard shared with the MCP server, bad
input, and the side-by-side diff rows."""

from __future__ import annotations

import difflib
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from markus_memory import InvalidInputError, open_agent
from markus_memory.cli import cli
from markus_memory.dream.report import file_diff
from markus_memory.layers.knowledge import Observation
from markus_memory.ui import create_app
from markus_memory.ui.pages_dreams import side_by_side
from markus_memory.ui.web import MAX_FORM_BYTES

from ..clocks import FakeClock
from .conftest import FormClient, Running, serving
from .seed import NOW, settings_for

TOKEN = "ui-token-for-the-tests-0123456789"
FORM = {"content-type": "application/x-www-form-urlencoded"}


NOTE = {"key": "from-outside", "text": "should not land", "fingerprint": "absent"}


def notebook_post(url: str, **headers: str) -> httpx.Response:
    return httpx.post(f"{url}/agents/alice/notebook/save", data=NOTE, headers=headers)


def test_an_unknown_agent_is_a_404_page_and_creates_nothing(ui: Running) -> None:
    for path in ("/agents/nobody/notebook", "/agents/nobody/dreams", "/agents/..%2Fx/state"):
        response = httpx.get(ui.url + path)
        assert response.status_code == 404, path
        assert "text/html" in response.headers["content-type"]
        assert "<h1>" in response.text
    with FormClient(base_url=ui.url) as client:
        posted = client.send_form("/agents/nobody/notebook/save", {"key": "k", "text": "t"})
    assert posted.status_code == 404
    assert sorted(p.name for p in (ui.home / "agents").iterdir()) == ["alice", "bob"]


def test_unknown_session_activity_and_dream_are_404(ui: Running) -> None:
    for path in ("conversations/nope", "activities/act-nope", "dreams/dream_nope"):
        assert httpx.get(f"{ui.url}/agents/alice/{path}").status_code == 404, path


def test_a_write_from_a_foreign_origin_is_refused_and_changes_nothing(ui: Running) -> None:
    before = ui.agent_file("NOTEBOOK.md").read_text()
    port = int(ui.url.rsplit(":", 1)[1])
    other = port + 1 if port < 65535 else port - 1
    save = "/agents/alice/notebook/save"
    with FormClient(base_url=ui.url) as client:
        refused = {
            "foreign": client.send_form(save, NOTE, Origin="https://attacker.example"),
            "cross-site": client.send_form(save, NOTE, **{"Sec-Fetch-Site": "cross-site"}),
            "same-site": client.send_form(save, NOTE, **{"Sec-Fetch-Site": "same-site"}),
            "other port": client.send_form(save, NOTE, Origin=f"http://127.0.0.1:{other}"),
            "localhost, other port": client.send_form(
                save, NOTE, Origin=f"http://localhost:{other}"
            ),
            "no port": client.send_form(save, NOTE, Origin="http://127.0.0.1"),
            "https": client.send_form(save, NOTE, Origin=f"https://127.0.0.1:{port}"),
            "referer, other port": client.send_form(
                save, NOTE, Referer=f"http://127.0.0.1:{other}/page"
            ),
            "null": client.send_form(save, NOTE, Origin="null"),
            "no form token": notebook_post(ui.url, Origin=ui.url),
            "guessed form token": client.post(
                save, data={**NOTE, "form_token": "0" * 64}, headers={"Origin": ui.url}
            ),
        }
        rebound = client.send_form(save, NOTE, Host="attacker.example")
        assert {k: r.status_code for k, r in refused.items()} == dict.fromkeys(refused, 403)
        assert rebound.status_code == 421
        assert "nothing was changed" in refused["other port"].text
        assert "form token" in refused["no form token"].text
        assert ui.agent_file("NOTEBOOK.md").read_text() == before
        same_origin = client.send_form(save, NOTE, Origin=f"http://localhost:{port}")
        assert same_origin.status_code == 303
    assert "should not land" in ui.agent_file("NOTEBOOK.md").read_text()


def test_a_form_token_belongs_to_its_browser(ui: Running) -> None:
    before = ui.agent_file("NOTEBOOK.md").read_text()
    with FormClient(base_url=ui.url) as mine, FormClient(base_url=ui.url) as theirs:
        theirs.token = mine.form_token()
        theirs.form_token()  # the other browser has its own cookie
        stolen = theirs.send_form("/agents/alice/notebook/save", NOTE)
        cookie = mine.cookies["markus_ui_forms"]
        assert stolen.status_code == 403
        assert ui.agent_file("NOTEBOOK.md").read_text() == before
        answer = mine.get("/agents/alice/notebook")
        assert "set-cookie" not in answer.headers  # the cookie is kept, not re-issued
        assert mine.cookies["markus_ui_forms"] == cookie
        assert mine.send_form("/agents/alice/notebook/save", NOTE).status_code == 303
    first = httpx.get(ui.url + "/agents/alice/notebook").headers["set-cookie"].lower()
    assert "httponly" in first and "samesite=strict" in first


@pytest.fixture
def guarded(seeded: tuple[Path, FakeClock]) -> Iterator[Running]:
    home, clock = seeded
    with serving(create_app(settings_for(home, clock), token=TOKEN)) as url:
        yield Running(url, home, clock)


def test_a_write_without_the_token_is_refused_and_changes_nothing(guarded: Running) -> None:
    before = guarded.agent_file("NOTEBOOK.md").read_text()
    missing = notebook_post(guarded.url)
    wrong = notebook_post(guarded.url, Authorization="Bearer wrong")
    assert missing.status_code == wrong.status_code == 401
    assert guarded.agent_file("NOTEBOOK.md").read_text() == before
    page = httpx.get(guarded.url + "/agents/alice/knowledge")
    assert page.status_code == 303
    assert page.headers["location"] == "/login?next=/agents/alice/knowledge"
    accepted = notebook_post(guarded.url, Authorization=f"bearer {TOKEN}")
    assert accepted.status_code == 303
    assert "should not land" in guarded.agent_file("NOTEBOOK.md").read_text()


def test_the_login_form_sets_a_cookie_that_opens_the_pages(guarded: Running) -> None:
    with FormClient(base_url=guarded.url) as client:
        assert client.get("/login").status_code == 200
        assert client.get("/static/style.css").status_code == 200
        client.token = client.form_token("/login")
        bad = client.send_form("/login", {"token": "nope"})
        assert bad.status_code == 401 and "not the right one" in bad.text
        good = client.send_form("/login?next=/agents/alice/state", {"token": TOKEN})
        assert good.status_code == 303 and good.headers["location"] == "/agents/alice/state"
        cookie = good.headers["set-cookie"]
        assert TOKEN not in cookie and "httponly" in cookie.lower()
        assert "samesite=strict" in cookie.lower()
        assert client.get("/agents/alice/state").status_code == 200
        elsewhere = client.send_form("/login?next=//evil.example/x", {"token": TOKEN})
        assert elsewhere.headers["location"] == "/"


def test_binding_beyond_the_literal_loopback_names_needs_a_token(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, FakeClock(NOW))
    with pytest.raises(InvalidInputError, match="token"):
        create_app(settings, host="127.0.0.2")
    create_app(settings, host="127.0.0.2", token=TOKEN)


def test_a_foreign_host_is_refused_on_a_loopback_alias_too(
    seeded: tuple[Path, FakeClock],
) -> None:
    home, clock = seeded
    app = create_app(settings_for(home, clock), host="127.0.0.2", token=TOKEN)
    with serving(app, host="127.0.0.2") as url:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        page = url + "/agents/alice/notebook"
        rebound = httpx.get(page, headers={**auth, "Host": "attacker.example"})
        fine = httpx.get(page, headers=auth)
    assert rebound.status_code == 421 and fine.status_code == 200


def test_oversized_and_malformed_forms_get_a_clear_message(ui: Running) -> None:
    before = ui.agent_file("NOTEBOOK.md").read_text()
    url = ui.url + "/agents/alice/notebook/save"
    huge = httpx.post(url, content=b"key=k&text=" + b"x" * (MAX_FORM_BYTES + 10), headers=FORM)
    assert huge.status_code == 413 and "over the limit" in huge.text
    binary = httpx.post(url, content=b"key=k&text=\xff\xfe", headers=FORM)
    assert binary.status_code == 400 and "not valid UTF-8" in binary.text
    multipart = httpx.post(url, files={"text": ("a.txt", b"hello")})
    assert multipart.status_code == 415 and "url-encoded" in multipart.text
    garbage = httpx.post(url, content=b"&&==&", headers=FORM)
    assert garbage.status_code == 400 and "could not be read" in garbage.text
    with FormClient(base_url=ui.url) as client:
        no_key = client.send_form(url, {"text": "t"})
        bad_key = client.send_form(url, {"key": "bad\nkey", "text": "t", "fingerprint": "absent"})
    assert no_key.status_code == 400 and "the entry key is required" in no_key.text
    assert bad_key.status_code == 400 and "Refused" in bad_key.text
    assert ui.agent_file("NOTEBOOK.md").read_text() == before


def test_the_favicon_and_the_assets_are_served_from_the_package(ui: Running) -> None:
    icon = httpx.get(ui.url + "/favicon.ico", follow_redirects=True)
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg")
    response = httpx.get(ui.url + "/agents/alice/notebook")
    page = response.text
    assert "http://" not in page.replace(ui.url, "") and "https://" not in page
    policy = response.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy
    assert response.headers["x-frame-options"] == "DENY"


def test_ui_command_refuses_an_unsafe_bind_and_a_port_in_use(tmp_path: Path) -> None:
    runner = CliRunner()
    home = ["--home", str(tmp_path / "h")]
    unsafe = runner.invoke(cli, [*home, "ui", "--host", "127.0.0.2"])
    assert unsafe.exit_code == 2 and "token" in unsafe.output
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        busy = runner.invoke(cli, [*home, "ui", "--port", str(port)])
    assert busy.exit_code == 1
    assert busy.output.strip().splitlines() == [
        f"Error: port {port} on 127.0.0.1 is already in use; pick another with --port"
    ]


lines = st.lists(st.sampled_from(["a", "b", "c", "## x", "", "d e"]), max_size=30)


@given(lines, lines)
def test_side_by_side_rows_point_at_the_right_lines(before: list[str], after: list[str]) -> None:
    old, new = "\n".join(before) + "\n", "\n".join(after) + "\n"
    files = side_by_side(file_diff("knowledge.md", old, new))
    if old == new:
        assert files == []
        return
    (diff,) = files
    old_lines, new_lines = old.splitlines(), new.splitlines()
    for row in diff.rows:
        number, text, kind = row.left
        if number is not None:
            assert old_lines[number - 1] == text and kind in ("", "del")
        number, text, kind = row.right
        if number is not None:
            assert new_lines[number - 1] == text and kind in ("", "ins")
    removed = [r.left[1] for r in diff.rows if r.left[2] == "del"]
    added = [r.right[1] for r in diff.rows if r.right[2] == "ins"]
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines)
    changes = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    assert len(removed) == sum(i2 - i1 for _, i1, i2, _, _ in changes)
    assert len(added) == sum(j2 - j1 for _, _, _, j1, j2 in changes)


@pytest.mark.slow
def test_the_ui_command_serves_the_home(seeded: tuple[Path, FakeClock]) -> None:
    home, _ = seeded
    script = shutil.which("markus-memory", path=str(Path(sys.executable).parent))
    assert script is not None
    env = {**os.environ, "MARKUS_HOME": str(home)}
    command = [script, "ui", "--agent", "alice", "--port", "0"]
    with subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stderr is not None
            banner = proc.stderr.readline()
            assert banner.startswith("markus-memory UI: http://127.0.0.1:"), banner
            url = banner.split()[2]
            assert url.endswith("/agents/alice/notebook")
            for _ in range(200):
                try:
                    page = httpx.get(url)
                    break
                except httpx.ConnectError:
                    time.sleep(0.05)
            assert page.status_code == 200 and "current-task" in page.text
        finally:
            proc.terminate()
            proc.wait(20)


def test_the_observation_timeline_pages_by_100_newest_first(tmp_path: Path) -> None:
    clock = FakeClock(NOW)
    settings = settings_for(tmp_path / "home", clock)
    with open_agent("carol", settings=settings) as mem:
        with mem.knowledge.transaction() as doc:
            for i in range(150):
                moment = NOW - timedelta(minutes=150 - i)
                doc.observations.append(Observation(f"obs_{i:04d}", "fact", f"fact {i}", moment))
    with serving(create_app(settings)) as url, httpx.Client(base_url=url) as client:
        first = client.get("/agents/carol/knowledge").text
        second = client.get("/agents/carol/knowledge?page=2").text
        beyond = client.get("/agents/carol/knowledge?page=9").text
    assert first.count('name="id"') == 100 and "obs_0149" in first and "obs_0049" not in first
    assert "showing 1–100" in first and "page=2" in first
    assert second.count('name="id"') == 50 and "obs_0049" in second and "obs_0000" in second
    assert beyond == second


def test_a_ticked_observation_edited_meanwhile_is_neither_merged_nor_deleted(
    ui: Running,
) -> None:
    page = httpx.get(ui.url + "/agents/alice/knowledge?tag=search").text
    ticked = re.findall(r'name="id" value="([^"]+)"', page)
    assert len(ticked) == 2
    path = ui.agent_file("knowledge.md")
    obs_id = ticked[0].rpartition("@")[0]
    with open_agent("alice", settings=settings_for(ui.home, ui.clock)) as mem:
        old = next(o for o in mem.knowledge.observations() if o.id == obs_id)
    path.write_text(path.read_text().replace(old.content, "Edited by hand meanwhile."))
    by_hand = path.read_text()
    for action in ("merge", "delete"):
        with FormClient(base_url=ui.url) as client:
            answer = client.send_form(
                f"/agents/alice/knowledge/observations/{action}",
                [*(("id", t) for t in ticked), ("content", "merged")],
            )
        assert answer.status_code == 409, action
        assert f"{obs_id} changed since the page was loaded" in answer.text
    assert path.read_text() == by_hand


def test_every_form_that_posts_carries_the_form_token() -> None:
    templates = Path(create_app.__code__.co_filename).parent / "templates"
    for path in templates.glob("*.html"):
        forms = re.findall(r"<form[^>]*>[^\n]*", path.read_text())
        for form in forms:
            if 'method="post"' in form:
                assert 'name="form_token" value="{{ form_token }}"' in form, (path.name, form)
