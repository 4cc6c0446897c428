from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from markus_memory._lock import AgentLock
from markus_memory.config import AgentPaths, Limits
from markus_memory.errors import CorruptFileError, InvalidInputError, NotFoundError
from markus_memory.layers.procedural import (
    DEFAULT_HEARTBEAT_CHECKLIST,
    Policy,
    RoleLoader,
    RoleTemplates,
    infer_category,
    parse_policies,
)

from .conftest import FakeClock

PM_ROLE = "# Product Manager\n\nYou own the roadmap and talk to users.\n\n## Duties\n- plan\n"


@pytest.fixture
def templates_dir(tmp_path: Path) -> Path:
    roles = tmp_path / "templates" / "roles"
    (roles / "product-manager").mkdir(parents=True)
    (roles / "product-manager" / "ROLE.md").write_text(PM_ROLE, encoding="utf-8")
    (roles / "product-manager" / "HEARTBEAT.md").write_text("- check the board\n", "utf-8")
    (roles / "product-manager" / "POLICIES.md").write_text(
        "# Policies\n\n## Security\n- No prod access\n", encoding="utf-8"
    )
    (roles / "developer").mkdir()
    (roles / "developer" / "ROLE.md").write_text("# Developer\nWrites code.\n", "utf-8")
    (roles / "not-a-role").mkdir()
    (roles / "not-a-role" / "README.md").write_text("nothing\n", "utf-8")
    (roles / "HANDBOOK.md").write_text("SHARED HANDBOOK TEXT\n", "utf-8")
    return roles


@pytest.fixture
def templates(templates_dir: Path) -> RoleTemplates:
    return RoleTemplates([templates_dir])


@pytest.fixture
def loader(paths: AgentPaths, lock: AgentLock, limits: Limits, clock: FakeClock, templates):
    return RoleLoader(paths, lock, limits, clock, templates=templates)


# the original's role-loader.test.ts


def test_lists_available_roles_only_dirs_with_role_md(templates: RoleTemplates) -> None:
    assert templates.list_available_roles() == ["developer", "product-manager"]


def test_resolves_template_dir_by_name_by_path_and_unknown(
    templates: RoleTemplates, templates_dir: Path
) -> None:
    assert templates.resolve_template_dir("developer") == templates_dir / "developer"
    absolute = str(templates_dir / "product-manager")
    assert templates.resolve_template_dir(absolute) == Path(absolute)
    assert templates.resolve_template_dir("nope") is None


def test_loads_role_with_parsed_title_and_description(templates: RoleTemplates) -> None:
    role = templates.load_role("product-manager")
    assert role.name == "Product Manager"
    assert role.description == "You own the roadmap and talk to users."
    assert role.category == "product" and role.built_in is True
    assert re.fullmatch(r"role_[0-9a-f]{24}", role.id)
    assert role.system_prompt == PM_ROLE


def test_infers_engineering_category_from_role_name(templates: RoleTemplates) -> None:
    assert templates.load_role("developer").category == "engineering"


@pytest.mark.parametrize(
    ("name", "category"),
    [
        ("Senior Engineer", "engineering"),
        ("ops-manager", "operations"),
        ("marketing", "marketing"),
        ("customer-support", "customer_service"),
        ("accountant", "finance"),
        ("compliance", "legal"),
        ("poet", "custom"),
    ],
)
def test_category_inference_order(name: str, category: str) -> None:
    assert infer_category(name) == category


def test_loads_heartbeat_and_policies_files(templates: RoleTemplates) -> None:
    role = templates.load_role("product-manager")
    assert role.heartbeat_checklist == "- check the board\n"
    assert role.policies == (Policy("Security", ("No prod access",)),)


def test_A_role_no_shared_append(templates: RoleTemplates) -> None:
    for name in templates.list_available_roles():
        assert "SHARED HANDBOOK TEXT" not in templates.load_role(name).system_prompt


def test_throws_when_role_not_found(templates: RoleTemplates) -> None:
    with pytest.raises(NotFoundError) as caught:
        templates.load_role("missing-role")
    assert str(caught.value) == "Role not found: missing-role"


def test_returns_template_dirs(templates_dir: Path, tmp_path: Path) -> None:
    assert RoleTemplates([templates_dir]).template_dirs() == [templates_dir]
    env = {"MARKUS_TEMPLATES_DIR": str(tmp_path / "t")}
    assert RoleTemplates(environ=env).template_dirs() == [tmp_path / "t" / "roles"]
    assert RoleTemplates(environ={}, cwd=tmp_path).template_dirs() == [
        tmp_path / "templates" / "roles"
    ]


def test_policies_text_before_the_first_heading_is_not_a_policy() -> None:
    text = "Intro line, not a policy\n## Data\n* keep PII out\n-  \n## #skipped\n- x\n##\nno"
    assert parse_policies(text) == (Policy("Data", ("keep PII out",)),)


no_h2 = st.text().filter(lambda t: not re.search(r"(^|\n)##", t))


@given(no_h2, no_h2)
def test_policy_parser_never_invents_a_preamble_policy(preamble: str, rule: str) -> None:
    body = f"Intro {preamble}\n## Only\n- {rule}"
    assert [p.name for p in parse_policies(body)] == ["Only"]


# the agent's own role files


def test_missing_role_files_give_clear_defaults(loader: RoleLoader) -> None:
    role = loader.role()
    assert role.name == "agt_test" and role.system_prompt == "" and role.policies == ()
    assert loader.heartbeat() == DEFAULT_HEARTBEAT_CHECKLIST
    assert not loader.directory.exists()


def test_install_copies_a_template_and_keeps_existing_files(loader: RoleLoader) -> None:
    loader.directory.mkdir()
    (loader.directory / "HEARTBEAT.md").write_text("- mine\n", "utf-8")
    role = loader.install("product-manager")
    assert role.name == "Product Manager" and loader.heartbeat() == "- mine\n"
    assert role.policies[0].name == "Security"
    with pytest.raises(NotFoundError, match="Role not found: ghost"):
        loader.install("ghost")


def test_reload_role_reads_updated_role_md(loader: RoleLoader) -> None:
    loader.directory.mkdir()
    role_md = loader.directory / "ROLE.md"
    role_md.write_text("# Writer\nWrites.\n", "utf-8")
    assert loader.role().name == "Writer"
    role_md.write_text("# Editor in chief\nEdits everything.\n", "utf-8")
    assert loader.role().name == "Editor in chief"
    assert loader.system_prompt() == "# Editor in chief\nEdits everything.\n"


def test_reload_heartbeat_reads_heartbeat_md(loader: RoleLoader) -> None:
    loader.directory.mkdir()
    heartbeat = loader.directory / "HEARTBEAT.md"
    heartbeat.write_text("- one\n", "utf-8")
    assert loader.heartbeat() == "- one\n"
    heartbeat.write_text("- two\n", "utf-8")
    stamp = os.stat(heartbeat).st_mtime_ns + 1_000_000_000
    os.utime(heartbeat, ns=(stamp, stamp))  # same size: caught by the mtime
    assert loader.heartbeat() == "- two\n"
    heartbeat.unlink()
    assert loader.heartbeat() == DEFAULT_HEARTBEAT_CHECKLIST


def test_unchanged_files_are_served_from_cache(loader: RoleLoader) -> None:
    loader.directory.mkdir()
    (loader.directory / "ROLE.md").write_text("# A\n", "utf-8")
    assert loader.role() is loader.role()


def test_invalid_utf8_role_raises_corrupt_file(loader: RoleLoader) -> None:
    loader.directory.mkdir()
    (loader.directory / "ROLE.md").write_bytes(b"# R\xff\n")
    with pytest.raises(CorruptFileError):
        loader.role()


@pytest.mark.parametrize("bad", [None, 3, "", "  "])
def test_bad_template_names_are_refused(templates: RoleTemplates, bad) -> None:
    with pytest.raises(InvalidInputError):
        templates.load_role(bad)
