"""Requests validated and fitting, per API shape and size band (issue 30, item 7).

    .tox/hermes/bin/python benchmarks/budget/shapes_bench.py [--quick]

For every request kind Hermes 0.19.0 sends (chat completions; anthropic_messages, also with extended thinking;
codex_responses; bedrock_converse), Hermes' own transport builds the request
from a session of large read and write rounds (``batontest.hermes_requests``), text only and with a screenshot in
every user turn, sized from far below to far above the window (``BANDS`` x ``WINDOWS``: the history is rebuilt
until Hermes' request, counted by the route's tokenizer, is the band's size; a band below the fixed part, the
system prompt, tools and the first request, cannot be reached). Each request goes through
Baton's ``llm_request`` middleware as Hermes' loop calls it (a fresh engine: the route's first request, its count
unconfirmed), and what comes back is judged apart from the engine that made it:

- valid: the shape's validator (``batontest.validators``: the provider's SDK request types and pairing rules);
- fits: the request sent, read afresh by its shape's reader and counted by the route's own tokenizer (Qwen3, a
  counter of its own, not the engine's), plus the images' estimated cost, plus the output cap it carries, is
  within the window.

Exits 1, after the table, when any request is invalid or over the window (``run.py`` adds the section to
REPORT.md and fails the same way).
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

HEADLINE = {  # benchmarks/INDEX.md's row (``python benchmarks/index.py``)
    "figure": ("every request kind Hermes 0.19 builds, 4K and 16K windows, half to 3x the window, text"
               " and images: 0 invalid, 0 over the window (quick run: 60 requests)"),
    "target": "0 invalid and 0 over the window",
    "findings": 17,
    "test": "tests/bench/test_shapes_bench.py",
}

REPO = Path(__file__).resolve().parents[2]
if __name__ == "__main__":
    sys.path[:0] = [str(REPO), str(REPO / "tests")]
    os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")

WINDOWS = (4096, 16_384, 64_000)
BANDS = (0.25, 0.5, 0.9, 1.0, 1.2, 2.0, 3.0)
QUICK_WINDOWS = (4096, 16_384)
QUICK_BANDS = (0.5, 1.2, 3.0)
SIZING_ROUNDS = 3  # builds of a history, each scaled by the last one's size against the band's
# Hermes' provider and base URL per api_mode (what its loop passes the middleware beside the request).
ROUTES = {"chat_completions": ("custom", "http://127.0.0.1:8000/v1"),
          "anthropic_messages": ("anthropic", "https://api.anthropic.com"),
          "codex_responses": ("openai-codex", "https://chatgpt.com/backend-api/codex"),
          "bedrock_converse": ("bedrock", "https://bedrock-runtime.us-east-1.amazonaws.com")}


def result_lines(window: int) -> int:
    """Lines per file read: a history of any band is many rounds, so every band is a different size."""
    return max(2, min(60, window // 1000))


class Judge:
    """The size of a request as sent: read afresh by its shape's reader, its text counted by the route's own
    tokenizer (a counter of its own), its images at their estimated cost (``tokens.media``)."""

    def __init__(self) -> None:
        from batontest.assets import qwen3_dir

        from baton_engine.tokens.contract import TokenizerConfig
        from baton_engine.tokens.plugins import build_backend

        self.config = TokenizerConfig(backend="hf", path=str(qwen3_dir()), model="Qwen/Qwen3-8B")
        self.backend = build_backend(self.config)[0]

    def prompt(self, request: dict[str, Any], api_mode: str) -> tuple[int, int]:
        """(prompt tokens, of which the images' estimate)."""
        from baton_engine.hermes.request_view import shape_for
        from baton_engine.tokens.media import split_request

        view = shape_for(api_mode).read(request)
        if view is None:
            raise ValueError(f"{api_mode}: the request sent cannot be read")
        text, media = split_request(view.count_request())
        counted = self.backend.count_chat(text)
        if not counted.exact or counted.tokens is None:
            raise RuntimeError(f"the judge's count is not exact ({counted.source})")
        return counted.tokens + media, media


def through_middleware(runtime: Any, project: Path, request: dict[str, Any], api_mode: str, window: int,
                       session: str) -> tuple[dict[str, Any], bool]:
    """The request Hermes sends after Baton's ``llm_request`` middleware, called as Hermes 0.19.0's loop calls it
    (``apply_llm_request_middleware``: a deep copy of the kwargs, the agent's model, provider, base URL and
    api_mode, from a frame holding the agent) with a fresh engine for the request's route; and whether the
    engine shortened it."""
    from batontest.agent_frames import LoopAgent, in_agent
    from batontest.hermes_requests import TOOLS, model_of

    from baton_engine.agent.runtime import set_runtime
    from baton_engine.hermes.engine import BatonContextEngine
    from baton_engine.hermes.patches import Activation

    set_runtime(runtime)
    provider, base_url = ROUTES[api_mode]
    engine = BatonContextEngine(project_dir=project)
    engine.update_model(model_of(request), window, base_url=base_url, provider=provider)
    engine.on_session_start(session, platform="cli")
    activation = Activation()
    activation.active = True  # the middleware alone: Hermes' estimators are not called here
    answer = in_agent(LoopAgent(engine, TOOLS), activation.llm_request, request=copy.deepcopy(request),
                      original_request=copy.deepcopy(request), task_id=session, turn_id=1, api_request_id=1,
                      session_id=session, platform="cli", model=model_of(request), provider=provider,
                      base_url=base_url, api_mode=api_mode, api_call_count=1)
    return (request if answer is None else answer["request"]), engine.requests.ledger.request_compactions > 0


def one(judge: Judge, runtime: Any, project: Path, kind: str, window: int, band: float, images: bool,
        index: int) -> dict[str, Any]:
    from batontest.hermes_requests import BUILDERS, history
    from batontest.validators import VALIDATORS

    from baton_engine.shapes.cap import find_cap

    api_mode, build = BUILDERS[kind]
    goal = target = band * window
    for _ in range(SIZING_ROUNDS):  # the history's text size scaled until Hermes' request is the band's size
        request = build(history(int(target), result_lines=result_lines(window), images=images))
        before, _ = judge.prompt(request, api_mode)
        target *= goal / before
    built = VALIDATORS[api_mode](request)
    if built:  # not Baton's: the benchmark built a request Hermes would not send
        raise RuntimeError(f"{kind}: Hermes' own request is invalid: {built[:3]}")
    sent, shortened = through_middleware(runtime, project, request, api_mode, window, f"shapes-{index}")
    problems = VALIDATORS[api_mode](sent)
    prompt, media = judge.prompt(sent, api_mode)
    cap = find_cap(sent)
    return {"kind": kind, "window": window, "band": band, "images": images, "before": before, "prompt": prompt,
            "media": media, "cap": cap.value if cap is not None else None, "shortened": shortened,
            "problems": problems[:3], "valid": not problems,
            "fits": cap is not None and prompt + cap.value <= window}


def run(quick: bool = False, bands: tuple[float, ...] | None = None) -> dict[str, Any]:
    """Every request kind x window x band x history, judged; ``rows`` one per request."""
    import logging

    os.environ.setdefault("HERMES_HOME", tempfile.mkdtemp(prefix="baton-shapes-hermes-"))  # before Hermes imports
    from batontest.hermes_home import initialised_project
    from batontest.hermes_requests import BUILDERS

    from baton_engine.agent.runtime import BatonRuntime
    from baton_engine.settings import BatonSettings

    logging.getLogger("baton_engine").setLevel(logging.ERROR)
    judge = Judge()
    runtime = BatonRuntime(BatonSettings(tokenizer=judge.config))  # the route's counter, apart from the judge's
    project = initialised_project(Path(tempfile.mkdtemp(prefix="baton-shapes-project-")))
    windows, default_bands = (QUICK_WINDOWS, QUICK_BANDS) if quick else (WINDOWS, BANDS)
    bands = bands or default_bands
    rows = []
    try:
        for kind in BUILDERS:
            for window in windows:
                for band in bands:
                    for images in (False, True):
                        rows.append(one(judge, runtime, project, kind, window, band, images, len(rows)))
                        row = rows[-1]
                        if not (row["valid"] and row["fits"]):
                            print(f"FAILED {kind} W={window} {band}x images={images}: prompt {row['prompt']} "
                                  f"+ cap {row['cap']}; {row['problems']}", file=sys.stderr, flush=True)
    finally:
        runtime.close()
    return {"windows": list(windows), "bands": list(bands), "rows": rows,
            "invalid": sum(not r["valid"] for r in rows), "over_window": sum(not r["fits"] for r in rows)}


def render(results: dict[str, Any]) -> list[str]:
    """The report's section: per request kind and band (over every window, text and images), the counts."""
    lines = ["## Requests validated and fitting, per shape and size (`benchmarks/budget/shapes_bench.py`)", "",
             "Each request is built by Hermes 0.19.0's own transport from a session of large read and write rounds "
             "(text only, and with a 512x384 screenshot in every user turn), at a band of the window "
             f"({', '.join(f'{w:,}' for w in results['windows'])}), then passed through Baton's `llm_request` "
             "middleware as Hermes' loop calls it (a fresh engine: an unconfirmed route). Valid: the shape's "
             "validator (the provider's SDK request types and pairing rules, `tests/batontest/validators.py`). "
             "Fits: the request sent, read afresh and counted by the route's tokenizer (Qwen3, a counter apart "
             "from the engine's) plus the images' estimate, plus its output cap, is within the window. "
             "Hermes' size: the request as Hermes built it, as a share of the window (smallest .. largest).", "",
             "| request | band | requests | valid | fitting | invalid | over window | shortened | Hermes' size "
             "| sent + cap, largest share of W | smallest cap sent |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    kinds = list(dict.fromkeys(r["kind"] for r in results["rows"]))
    for kind in kinds:
        for band in results["bands"]:
            rows = [r for r in results["rows"] if r["kind"] == kind and r["band"] == band]
            if not rows:
                continue
            shares = [r["before"] / r["window"] for r in rows]
            used = max((r["prompt"] + (r["cap"] or 0)) / r["window"] for r in rows)
            caps = [r["cap"] for r in rows if r["cap"] is not None]
            invalid, over = sum(not r["valid"] for r in rows), sum(not r["fits"] for r in rows)
            lines.append(f"| {kind} | {band}x | {len(rows)} | {len(rows) - invalid} | {len(rows) - over} | "
                         f"{invalid if not invalid else f'**{invalid}**'} | {over if not over else f'**{over}**'} | "
                         f"{sum(r['shortened'] for r in rows)} | {min(shares):.2f} .. {max(shares):.2f} | "
                         f"{used:.3f} | {min(caps) if caps else 'none'} |")
    total = len(results["rows"])
    verdict = "met" if results["invalid"] == 0 and results["over_window"] == 0 else "**NOT met**"
    return [*lines, "", f"{total} requests: {results['invalid']} invalid, {results['over_window']} over the window "
            f"(0 and 0 required: {verdict}).", ""]


def target(results: dict[str, Any]) -> tuple[str, bool, str]:
    """The report's Targets row: (target, met, figure)."""
    return ("every request valid and within the window, on every shape and size band (`shapes_bench.py`)",
            not failed(results), f"{len(results['rows'])} requests: {results['invalid']} invalid, "
            f"{results['over_window']} over the window")


def failed(results: dict[str, Any]) -> bool:
    """Any request invalid or over the window."""
    return bool(results["invalid"] or results["over_window"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two small windows and three bands")
    parser.add_argument("--bands", type=float, nargs="*", help="sizes as multiples of the window (default: all)")
    args = parser.parse_args(argv)
    results = run(args.quick, tuple(args.bands) if args.bands else None)
    print("\n".join(render(results)))
    return 1 if failed(results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
