"""Documentation that must stay true: docs/cli.md against the parser, README's commands against .ci/run and the
GitHub workflow, the supported Pythons alike in README, setup.cfg, tox.ini, .ci/run and the workflow."""

from __future__ import annotations

import argparse
import configparser
import re
import shlex

import pytest
from cli_support import REPO_ROOT

from synclient.cli import build_parser

CLI_DOC = (REPO_ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
CI_RUN = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
WORKFLOW = REPO_ROOT / ".github" / "workflows" / "ci.yml"
SUPPORTED_PYTHONS = ["3.9", "3.10", "3.11", "3.12", "3.13"]


def _subcommands(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


def _option_strings(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if action.option_strings:
            yield from action.option_strings
        elif not isinstance(action, argparse._SubParsersAction):
            yield action.metavar or action.dest


def _doc_section(command: str) -> str:
    match = re.search(rf"^## synclient {command}\n(.*?)(?=^## |\Z)", CLI_DOC, re.S | re.M)
    assert match, f"docs/cli.md has no '## synclient {command}' section"
    return match.group(1)


GLOBAL_SECTION = re.search(r"^## Global options\n(.*?)(?=^## )", CLI_DOC, re.S | re.M).group(1)
GLOBAL_OPTIONS = set(_option_strings(build_parser()))


def test_global_options_documented():
    for option in GLOBAL_OPTIONS:
        assert f"`{option}" in GLOBAL_SECTION, f"{option} is missing from the global options of docs/cli.md"


@pytest.mark.parametrize("command", sorted(_subcommands(build_parser())))
def test_every_command_and_option_documented(command):
    section = _doc_section(command)
    subparser = _subcommands(build_parser())[command]
    for option in set(_option_strings(subparser)) - GLOBAL_OPTIONS:
        assert f"`{option}" in section, f"{option} of '{command}' is missing from docs/cli.md"


def test_no_documented_command_that_does_not_exist():
    documented = set(re.findall(r"^## synclient (\w+)", CLI_DOC, re.M))
    assert documented == set(_subcommands(build_parser()))


def _quick_start_commands():
    section = re.search(r"^## Quick start\n(.*?)(?=^## )", README, re.S | re.M).group(1)
    blocks = re.findall(r"```(?:sh|bash|console)?\n(.*?)```", section, re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def test_readme_quick_start_has_exactly_two_commands():
    commands = _quick_start_commands()
    assert len(commands) == 2, commands
    install_and_demo, tests = commands
    assert "pip install ." in install_and_demo and install_and_demo.endswith("synclient demo")
    assert "'.[test]'" in tests and "pytest" in tests
    shlex.split(tests)  # well-formed shell


#: the tests the README's command leaves out (setup.cfg's addopts deselect ``slow``); CI runs them after it
SLOW_TIER = "python -m pytest -m slow"


def test_the_readme_command_leaves_out_the_slow_tier_only():
    config = configparser.ConfigParser()
    config.read(REPO_ROOT / "setup.cfg", encoding="utf-8")
    assert shlex.split(config["tool:pytest"]["addopts"])[-2:] == ["-m", "not slow"]
    assert "pytest-xdist" in config["options.extras_require"]["test"]  # addopts' -n needs it


def test_ci_runs_the_readme_test_command_verbatim_in_a_fresh_venv_then_the_slow_tier():
    readme_test_command = _quick_start_commands()[1]
    command_lines = [line.strip() for line in CI_RUN.splitlines() if line.strip() and not line.startswith("#")]
    expected = f"python3 -m venv .venv && . .venv/bin/activate && {readme_test_command}"
    assert expected in command_lines, f".ci/run must contain: {expected}"
    # last, in the README command's venv: the slow tier; with `set -e` a failing one's exit code is the script's
    assert command_lines[-2:] == [expected, SLOW_TIER]
    assert "set -euo pipefail" in command_lines
    assert (REPO_ROOT / ".ci" / "run").stat().st_mode & 0o111, ".ci/run must be executable"


def test_github_workflow_runs_the_readme_test_command_on_each_os_with_the_oldest_and_newest_python():
    yaml = pytest.importorskip("yaml")
    jobs = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"]
    assert sorted(jobs) == ["static-checks", "test"]
    job = jobs["test"]
    assert job["strategy"]["fail-fast"] is False
    matrix = job["strategy"]["matrix"]
    assert sorted(matrix["os"]) == ["macos-latest", "ubuntu-latest", "windows-latest"]
    assert matrix["python"] == [SUPPORTED_PYTHONS[0], SUPPORTED_PYTHONS[-1]]
    assert job["defaults"]["run"]["shell"] == "bash"  # the README's quoting, on Windows too
    (setup_python,) = [step for step in job["steps"] if step.get("uses", "").startswith("actions/setup-python@")]
    assert setup_python["with"]["python-version"] == "${{ matrix.python }}"
    assert [step["run"] for step in job["steps"] if "run" in step] == [_quick_start_commands()[1], SLOW_TIER]
    (static,) = [step["run"] for step in jobs["static-checks"]["steps"] if "run" in step]
    assert static == f"pip install '.[lint]' && {' && '.join(STATIC_CHECKS)}"


#: the static checks the README's Developing section names; CI runs each (pyproject.toml configures them)
STATIC_CHECKS = ("ruff check .", "ruff format --check .", "mypy")


def test_ci_runs_the_static_checks_the_readme_names():
    for check in STATIC_CHECKS:
        assert f"`{check}`" in README, check
        assert f'PATH="$other_venvs/lint/bin:$PATH" {check}' in CI_RUN, check


def test_the_supported_pythons_are_said_alike_everywhere():
    setup_cfg = (REPO_ROOT / "setup.cfg").read_text(encoding="utf-8")
    assert f"python_requires = >={SUPPORTED_PYTHONS[0]}\n" in setup_cfg
    assert re.findall(r"Programming Language :: Python :: (3\.\d+)$", setup_cfg, re.M) == SUPPORTED_PYTHONS
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(REPO_ROOT / "tox.ini", encoding="utf-8")
    envlist = [name.strip() for name in tox["tox"]["envlist"].split(",")]
    assert envlist == ["py" + version.replace(".", "") for version in SUPPORTED_PYTHONS]
    assert f"Python {SUPPORTED_PYTHONS[0]} to {SUPPORTED_PYTHONS[-1]}" in README
    assert f"for version in {SUPPORTED_PYTHONS[0]} {SUPPORTED_PYTHONS[-1]}; do" in CI_RUN


def _exit_code_rows():
    section = re.search(r"^## Exit codes\n(.*?)(?=^## )", CLI_DOC, re.S | re.M).group(1)
    return dict(re.findall(r"^\| (\d+) \| (.*) \|$", section, re.M))


def test_exit_codes_documented():
    from synclient.cli import ExitCode

    rows = _exit_code_rows()
    assert set(rows) == {str(int(code)) for code in ExitCode}
    # what _explain maps to 2 (tests/cli/test_cli_errors.py checks the mapping itself)
    for cause in (
        "usage",
        "token",
        "malformed id",
        "unknown id",
        "access denied",
        "endpoint",
        "redirects",
        "TLS",
        "`--path` that exists as a file",
        "lock",
    ):
        assert cause in rows["2"], f"exit code 2 in docs/cli.md does not mention {cause!r}"
