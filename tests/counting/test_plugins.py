from __future__ import annotations

import sys
import textwrap
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from baton_engine.tokens.contract import BackendConfigError, TokenizerConfig
from baton_engine.tokens.plugins import (
    backends_report,
    build_backend,
    discover,
    installed_backends,
    select_backend,
)
from baton_engine.tokens.rough import RoughBackend

PLUGIN_SOURCE = '''
from baton_engine.tokens.contract import BackendSpec
from baton_engine.tokens.hookspecs import hookimpl
from baton_engine.tokens.rough import RoughBackend

BUILT = []

def _factory(name):
    def build(config):
        BUILT.append(name)
        return RoughBackend()
    return build

@hookimpl
def baton_tokenizer_backends():
    return [BackendSpec(n, factory=_factory(n)) for n in {names!r}]
'''


@pytest.fixture()
def plugin_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Write importable plugin modules; returns a maker of EntryPoints pointing at them."""
    monkeypatch.syspath_prepend(str(tmp_path))
    made: list[str] = []

    def make(module: str, names: list[str], source: str | None = None) -> EntryPoint:
        (tmp_path / f"{module}.py").write_text(source or textwrap.dedent(PLUGIN_SOURCE).format(names=names))
        made.append(module)
        return EntryPoint(name=module, value=module, group="baton_engine.tokenizers")

    yield make
    for module in made:
        sys.modules.pop(module, None)


def test_rough_is_built_in_and_registered_through_the_hook() -> None:
    registry = discover()
    assert registry.backends["rough"].distribution == "baton-engine"
    assert "rough" in installed_backends()


def test_default_auto_without_settings_builds_rough() -> None:
    backend, selection = build_backend(TokenizerConfig())
    assert isinstance(backend, RoughBackend)
    assert selection.name == "rough" and selection.reason.startswith("auto: no tokenizer URL")


def test_only_the_selected_backend_is_constructed(plugin_modules) -> None:
    registry = discover([plugin_modules("plug_only_one", ["alpha", "beta", "gamma"])])
    _, selection = build_backend(TokenizerConfig(backend="beta"), registry)
    assert selection.name == "beta"
    assert sys.modules["plug_only_one"].BUILT == ["beta"]


@pytest.mark.parametrize(
    ("config", "expected", "why"),
    [
        (TokenizerConfig(url="http://127.0.0.1:8000", path="/m", model="gpt-4o"), "vllm", "tokenizer URL"),
        (TokenizerConfig(path="/models/qwen3", model="gpt-4o"), "hf", "path/id"),
        (TokenizerConfig(model="gpt-4o-mini"), "tiktoken", "OpenAI-family"),
        (TokenizerConfig(model="o3"), "tiktoken", "OpenAI-family"),
        (TokenizerConfig(model="o4-mini"), "tiktoken", "OpenAI-family"),
        (TokenizerConfig(model="openai/chatgpt-4o-latest"), "tiktoken", "OpenAI-family"),
        (TokenizerConfig(model="qwen3-8b"), "rough", "no tokenizer"),
        (TokenizerConfig(model="o3x-local"), "rough", "no tokenizer"),
    ],
)
def test_auto_rules(plugin_modules, config: TokenizerConfig, expected: str, why: str) -> None:
    registry = discover([plugin_modules("plug_auto", ["vllm", "hf", "tiktoken"])])
    selection = select_backend(config, registry)
    assert selection.name == expected and why in selection.reason and selection.requested == "auto"


def test_auto_falls_back_to_rough_when_its_pick_is_missing_and_says_so() -> None:
    registry = discover([])
    selection = select_backend(TokenizerConfig(url="http://127.0.0.1:8000"), registry)
    assert selection.name == "rough"
    assert "vllm" in selection.reason and "not installed" in selection.reason


def test_explicit_unknown_name_fails_listing_installed(plugin_modules) -> None:
    registry = discover([plugin_modules("plug_known", ["alpha"])])
    with pytest.raises(BackendConfigError, match=r"'vllm' is not installed \(installed: alpha, rough"):
        build_backend(TokenizerConfig(backend="vllm"), registry)


def test_plugin_that_fails_to_import_is_reported_not_fatal(plugin_modules) -> None:
    broken = plugin_modules("plug_broken", [], source="raise RuntimeError('secret-in-import-error')\n")
    registry = discover([broken, plugin_modules("plug_fine", ["alpha"])])
    assert [item.error_type for item in registry.broken] == ["RuntimeError"]
    assert set(registry.backends) == {"alpha", "rough"}
    with pytest.raises(BackendConfigError, match="failed to import: plug_broken") as info:
        select_backend(TokenizerConfig(backend="nope"), registry)
    assert "secret-in-import-error" not in str(info.value)


def test_auto_names_a_broken_pick(plugin_modules) -> None:
    broken = plugin_modules("tiktoken_broken", [], source="import not_a_module_anywhere\n")
    registry = discover([EntryPoint("tiktoken", broken.value, broken.group)])
    selection = select_backend(TokenizerConfig(model="gpt-4o"), registry)
    assert selection.name == "rough" and "failed to import" in selection.reason


def test_two_plugins_claiming_one_name_fail_naming_both(plugin_modules) -> None:
    first = plugin_modules("plug_dup_a", ["shared"])
    second = plugin_modules("plug_dup_b", ["shared"])
    with pytest.raises(BackendConfigError, match="'shared' is provided by two distributions") as info:
        discover([first, second])
    assert "plug_dup_a" in str(info.value) and "plug_dup_b" in str(info.value)


def test_a_plugin_cannot_take_over_rough(plugin_modules) -> None:
    with pytest.raises(BackendConfigError, match="baton-engine"):
        discover([plugin_modules("plug_rough", ["rough"])])


def test_factory_failure_is_a_startup_error_naming_type_only(plugin_modules) -> None:
    source = textwrap.dedent('''
        from baton_engine.tokens.contract import BackendSpec
        from baton_engine.tokens.hookspecs import hookimpl
        def boom(config):
            raise OSError("token sk-live-SECRET")
        @hookimpl
        def baton_tokenizer_backends():
            return [BackendSpec("boom", factory=boom)]
    ''')
    registry = discover([plugin_modules("plug_boom", [], source=source)])
    with pytest.raises(BackendConfigError, match=r"'boom'.*failed to start \(OSError\)") as info:
        build_backend(TokenizerConfig(backend="boom"), registry)
    assert "SECRET" not in str(info.value)


def test_report_lists_backends_and_auto_choice(plugin_modules) -> None:
    registry = discover([plugin_modules("plug_report", ["hf"])])
    report = backends_report(TokenizerConfig(backend="rough", path="/models/x"), registry)
    assert [b["name"] for b in report["backends"]] == ["hf", "rough"]
    assert report["configured"] == "rough"
    assert report["auto"]["name"] == "hf" and "path" in report["auto"]["reason"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [("return BackendSpec('x', factory=None)", "returned BackendSpec, expected a list"),
     ("return ['x']", "returned list, expected a list of BackendSpec")],
)
def test_plugin_returning_the_wrong_shape_fails_at_startup(plugin_modules, body: str, expected: str) -> None:
    source = f"""
from baton_engine.tokens.contract import BackendSpec
from baton_engine.tokens.hookspecs import hookimpl
@hookimpl
def baton_tokenizer_backends():
    {body}
"""
    with pytest.raises(BackendConfigError, match=expected):
        discover([plugin_modules("plug_shape_" + str(len(body)), [], source=source)])


def test_plugin_whose_hook_raises_is_reported_and_skipped(plugin_modules) -> None:
    source = """
from baton_engine.tokens.hookspecs import hookimpl
@hookimpl
def baton_tokenizer_backends():
    raise RuntimeError("secret")
"""
    registry = discover([plugin_modules("plug_hook_raises", [], source=source)])
    assert [(b.entry_point, b.error_type) for b in registry.broken] == [("plug_hook_raises", "RuntimeError")]
    assert list(registry.backends) == ["rough"]


DETECTING_PLUGIN = '''
from baton_engine.tokens.contract import BackendSpec
from baton_engine.tokens.hookspecs import hookimpl
from baton_engine.tokens.rough import RoughBackend

ASKED = []

def broken(url, model, timeout):
    raise RuntimeError("a detector bug")

def knows(url, model, timeout):
    ASKED.append((url, model, timeout))
    return url == "http://counting:1/v1"

@hookimpl
def baton_tokenizer_backends():
    return [BackendSpec("a-broken", lambda config: RoughBackend(), detect=broken),
            BackendSpec("b-knows", lambda config: RoughBackend(), detect=knows),
            BackendSpec("c-silent", lambda config: RoughBackend())]
'''


def test_a_server_is_recognised_by_the_first_backend_that_detects_it_and_a_broken_detector_is_skipped(
        plugin_modules, caplog: pytest.LogCaptureFixture) -> None:
    from baton_engine.tokens.plugins import detect_server_backend

    registry = discover([plugin_modules("detecting", [], DETECTING_PLUGIN)])
    assert detect_server_backend("http://counting:1/v1", "m", 2.5, registry) == "b-knows"
    assert detect_server_backend("http://other:1/v1", None, 2.5, registry) is None
    assert sys.modules["detecting"].ASKED == [("http://counting:1/v1", "m", 2.5), ("http://other:1/v1", None, 2.5)]
    assert "'a-broken' failed to probe a server (RuntimeError)" in caplog.text
