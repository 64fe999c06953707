"""The README and docs/ say only what exists: every `baton ...` they show is a real command with real options,
every linked file and heading exists, every repository path they name is there.

Why a check and not a reviewer: pages move and commands get renamed; a stale command in the README is the
first thing a newcomer types.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
import yaml

from baton_engine.cli import cli
from baton_engine.settings import load_settings

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
TOP_DIRS = ("baton_engine", "tests", "benchmarks", "scripts", "demo", "docs", "schemas", "skills", "backends",
            "assets")
GENERATED = ("benchmarks/results/",)  # written by scripts/bench.sh, not committed
SHELL_FENCES = ("", "sh", "bash", "shell", "console")

FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
REPO_PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./*-]*)" % "|".join(TOP_DIRS))
ENV_PREFIX = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)+")


def _text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def _code(text: str) -> Iterator[tuple[str, str]]:
    """(kind, text) of every fenced block line and inline code span; kind is the fence language or 'inline'."""
    for match in FENCE.finditer(text):
        for line in match.group(2).splitlines():
            yield match.group(1), line
    for match in INLINE.finditer(FENCE.sub("", text)):
        yield "inline", match.group(1)


def _invocations(kind: str, code: str, program: str = "baton") -> Iterator[str]:
    """The `baton ...` (or ``program``) commands in a shell line or code span (comments, env prefixes and `&&`
    chains dropped; a comment's `or: baton ...` alternative included)."""
    if kind not in (*SHELL_FENCES, "inline"):
        return
    code, _, comment = code.partition(" # ")
    alternative = re.search(r"\bor: (baton [^(]*)", comment)  # `cmd   # or: baton ...`
    for part in [*re.split(r"&&|;|\s{2,}(?=baton )", code), *(alternative.groups() if alternative else ())]:
        segments = re.split(r"\s\|\s", ENV_PREFIX.sub("", part.strip()))
        if not segments[0].startswith(program + " "):
            continue
        if program != "baton":
            yield segments[0]
            continue
        yield segments[0]
        # a synopsis such as `baton doctor | gc | audit` lists alternatives; a pipe into another tool ends it
        yield from ("baton " + alt for alt in segments[1:] if alt.split()[0] in cli.commands)


def _problems(invocation: str) -> list[str]:
    words = [word.strip("[](),") for word in invocation.split()[1:]]
    return _check(cli, words, "baton")


def _check(node: click.Command, words: list[str], path: str) -> list[str]:
    if isinstance(node, click.Group):
        if not words or words[0].startswith("-"):
            return [] if not words else _options(node, words, path)
        names = words[0].split("|")
        missing = [name for name in names if name not in node.commands]
        if missing:
            return [f"{path}: no subcommand {missing[0]!r} (has {sorted(node.commands)})"]
        return [problem for name in names for problem in _check(node.commands[name], words[1:], f"{path} {name}")]
    return _options(node, words, path)


def _options(node: click.Command, words: list[str], path: str) -> list[str]:
    known = {opt for param in node.params for opt in (*param.opts, *param.secondary_opts)} | {"--help", "-h"}
    if node is cli:
        known.add("--version")
    options = [word.split("=")[0] for word in words if re.fullmatch(r"--?[a-z][\w-]*(=.*)?", word)]
    return [f"{path}: no option {option}" for option in options if option not in known]


def test_the_pages_show_baton_commands() -> None:
    found = [inv for page in PAGES for kind, code in _code(_text(page)) for inv in _invocations(kind, code)]
    assert len(found) > 40, found  # the extraction works: the handoff and tokens synopses alone have more


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_baton_command_is_real(page: Path) -> None:
    problems = [f"{inv!r}: {problem}" for kind, code in _code(_text(page)) for inv in _invocations(kind, code)
                for problem in _problems(inv)]
    assert not problems, problems


def test_a_wrong_command_or_option_is_caught() -> None:
    assert _problems("baton handoff lst") and _problems("baton resume --max-token 5")
    assert not _problems("baton record decision|evidence REF --input F") and not _problems("baton report")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    return {_slug(match) for match in re.findall(r"^#+\s+(.*)$", FENCE.sub("", _text(page)), re.M)}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_link_resolves(page: Path) -> None:
    problems = []
    for target in LINK.findall(FENCE.sub("", _text(page))):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        file_part, _, anchor = target.partition("#")
        linked = (page.parent / file_part).resolve() if file_part else page
        if not linked.exists():
            problems.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            problems.append(f"{target}: no heading #{anchor} in {linked.name}")
    assert not problems, problems


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_repository_path_named_exists(page: Path) -> None:
    missing = []
    for _, code in _code(_text(page)):
        for path in REPO_PATH.findall(code):
            path = path.rstrip(".")
            if path.startswith(GENERATED):
                continue
            if not (any(REPO.glob(path)) if "*" in path else (REPO / path).exists()):
                missing.append(path)
    assert not missing, missing


SINCE_022 = {("plugins", "validate"), ("plugins", "doctor")}  # Hermes 0.22's plugin manager


def _hermes_line() -> str:
    from baton_engine.hermes.config import installed_hermes_version

    return ".".join((installed_hermes_version() or "").split(".")[:2])


@pytest.mark.hermes
def test_every_hermes_command_shown_exists_with_its_options(tmp_path: Path) -> None:
    """The `hermes ...` lines people copy (enabling the plugin, resuming) against the installed Hermes' own help."""
    hermes = Path(sys.executable).parent / "hermes"
    shown = {inv for page in PAGES for kind, code in _code(_text(page)) for inv in _invocations(kind, code, "hermes")}
    assert "hermes plugins enable baton" in shown, shown
    problems = []
    for invocation in sorted(shown):
        words = [word.strip("[](),") for word in invocation.split()[1:]]
        command = [word for word in words if not word.startswith("-")]
        done = subprocess.run([str(hermes), *command, "--help"], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "HERMES_HOME": str(tmp_path)}, check=False)
        if done.returncode != 0 and tuple(command[:2]) in SINCE_022 and _hermes_line() == "0.19":
            continue  # the pages give these for 0.22+ only (docs/hermes-versions.md); 0.19 has no such command
        if done.returncode != 0:
            problems.append(f"{invocation!r}: hermes {' '.join(command)} --help exited {done.returncode}")
        problems += [f"{invocation!r}: hermes has no option {word}" for word in words
                     if word.startswith("-") and not re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", done.stdout)]
    assert not problems, problems


def test_every_baton_block_shown_in_yaml_is_a_valid_setting() -> None:
    """A `baton:` block people copy into config.yaml must load: unknown or malformed keys stop start-up."""
    blocks = [(page, yaml.safe_load(match.group(2))) for page in PAGES for match in FENCE.finditer(_text(page))
              if match.group(1) == "yaml"]
    baton_blocks = [(page, block["baton"]) for page, block in blocks if isinstance(block, dict) and "baton" in block]
    assert baton_blocks, "the README shows a config.yaml with a baton: block"
    for page, block in baton_blocks:
        settings = load_settings(env={}, hermes_block=block)
        assert settings.tokenizer.backend == block["tokenizer"]["backend"], page


@pytest.mark.hermes
def test_the_readme_configs_run_on_the_hermes_versions_they_name() -> None:
    """Each config.yaml in the README names the Hermes lines it is for (its first line, ``# Hermes 0.19 and 0.22``);
    on the installed Hermes, every one naming it clears that Hermes' own minimum (read from Hermes' code, as doctor
    reads it) for the main and the compression model, and one naming only another line does not (it says why)."""
    from baton_engine.hermes.config import installed_hermes_version
    from baton_engine.hermes.doctor import window_problems
    from baton_engine.hermes.minimum import compression_window, hermes_minimum

    version = installed_hermes_version()
    assert version is not None
    line = ".".join(version.split(".")[:2])
    configs = [(match.group(2).splitlines()[0], yaml.safe_load(match.group(2)))
               for match in FENCE.finditer(_text(REPO / "README.md")) if match.group(1) == "yaml"]
    configs = [(header, config) for header, config in configs if isinstance(config, dict) and "model" in config]
    assert all(header.startswith("# Hermes ") for header, _config in configs), [h for h, _c in configs]
    verdicts = {}
    for header, config in configs:
        window = config["model"]["context_length"]
        minimum = hermes_minimum(config)
        assert minimum is not None
        verdicts[header] = window_problems(window, None, minimum, compression_window(config, window),
                                           Path("config.yaml"))
    assert any(line in header for header in verdicts), f"no README config names Hermes {line}"
    for header, problems in verdicts.items():
        assert (not problems) == (line in header), (header, problems)
