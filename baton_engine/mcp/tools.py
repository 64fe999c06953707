"""The baton-mcp tools: names, precise input models, the agent-edge guardrails and one-line summaries.

Why no MCP SDK here: what a tool accepts, which ``operations`` function it calls and what it refuses is the
whole behaviour, and it is testable (and reusable by other harness adapters) without a protocol. Every tool
calls the same ``baton_engine.operations`` function as its ``baton`` command through ``results.call``, so
its result dict is exactly what ``baton ... --json`` prints.

Guardrails added at this edge, because an agent is a less careful author than a person at a terminal, and
each one refuses before anything is written (the CLI would write a draft and let validation flag it):

- artifact paths and ``file`` evidence refs must stay inside the project root (or ``policy.allowed_roots``);
- ``handoff_validate`` re-runs only commands on ``policy.recheck_allowlist``, otherwise nothing runs.

There is no init tool and no generic shell tool: writes happen only inside an already initialised project,
through the operations below.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from baton_engine import results
from baton_engine.errors import PolicyBlocked, UserInputError
from baton_engine.handoff import redact, store, validate
from baton_engine.handoff.capture import CapturePayload
from baton_engine.handoff.checkpoint import checkpoint_create
from baton_engine.handoff.config import load_config
from baton_engine.handoff.detector import DetectorSignals
from baton_engine.handoff.model import Status
from baton_engine.operations import detect, handoffs

Result = dict[str, Any]


class _Arguments(BaseModel):
    """Tool arguments refuse unknown keys: a typo is an error, not silently ignored input."""

    model_config = ConfigDict(extra="forbid")


class StatusArguments(_Arguments):
    pass


class ValidateArguments(_Arguments):
    ref: str = Field(min_length=1, description="Handoff id, short id or unique id prefix.")
    recheck: list[str] = Field(
        default_factory=list,
        description="Commands to re-run as evidence; only commands on policy.recheck_allowlist are allowed.")


class ReadyArguments(_Arguments):
    ref: str = Field(min_length=1, description="Handoff id, short id or unique id prefix.")
    accept_warnings: str | None = Field(
        default=None, min_length=1,
        description="Required when validation warns: the reason the warnings are acceptable (recorded).")


class ResumeArguments(_Arguments):
    ref: str | None = Field(default=None, min_length=1, description="Handoff to resume (default: latest ready).")
    format: Literal["prompt", "json"] = Field(
        default="prompt", description="'json' adds the full record to the result.")
    mark_resumed: bool = Field(default=False, description="Mark the handoff resumed (the only write this tool does).")
    max_tokens: int | None = Field(default=None, ge=1, description="Token budget of the brief.")


class ListArguments(_Arguments):
    status: Status | None = Field(default=None, description="Only handoffs with this status.")


class ForkArguments(_Arguments):
    ref: str = Field(min_length=1, description="The handoff to branch from (it stays unchanged).")
    label: str = Field(min_length=1, description="Name of the new branch of work.")


class MergeArguments(_Arguments):
    refs: list[str] = Field(min_length=2, description="Two or more handoffs to join.")
    resolution: str | None = Field(
        default=None, min_length=1,
        description="Written resolution decision; the merge is refused until one is given.")


class CaptureArguments(CapturePayload):
    """The capture payload plus the one MCP-only switch: secrets are refused unless redaction is accepted."""

    accept_redactions: bool = Field(
        default=False,
        description="Secret-like values in the payload are refused (nothing written) unless this is true; then they "
                    "are replaced by [REDACTED:<reason>] markers and each redaction is recorded.")


class DetectArguments(_Arguments):
    event: DetectorSignals | None = Field(default=None, description="Detector signals; unknown ones stay unused.")
    capture: CapturePayload | None = Field(
        default=None, description="Capture payload: a draft is created only when a handoff is recommended.")


# --- guardrails -------------------------------------------------------------------------------------------------


def _guard_paths(start: Path, payload: dict[str, Any] | None, what: str) -> None:
    """Refuse out-of-root artifact paths and file refs before anything is written (field names, no values)."""
    paths = store.find_project_root(start)
    if paths is None or not payload:
        return  # no project: the operation itself reports it the same way the CLI does
    allowed = load_config(paths.data_dir).policy.allowed_roots
    refs = [(f"artifacts[{i}].path", item.get("path")) for i, item in enumerate(payload.get("artifacts") or [])]
    refs += [(f"evidence[{i}].ref", item.get("ref")) for i, item in enumerate(payload.get("evidence") or [])
             if item.get("type") == "file"]
    problems = [f"{where}: {verdict.problem}" for where, text in refs
                if isinstance(text, str) and (verdict := validate.contain_path(text, paths.root, allowed)).problem]
    if problems:
        raise PolicyBlocked(f"{what} refused, nothing was written: " + "; ".join(problems))


def _guard_rechecks(start: Path, recheck: list[str]) -> None:
    """Only allowlisted commands are ever re-run; refuse the whole call otherwise (nothing runs or is written)."""
    paths = store.find_project_root(start)
    if paths is None or not recheck:
        return
    refused = validate.refused_rechecks(recheck, load_config(paths.data_dir).policy.recheck_allowlist)
    if refused:
        shown = ", ".join(repr(command) for command in refused)
        raise PolicyBlocked(f"recheck of {shown} refused, nothing was run or written: only commands on "
                            "policy.recheck_allowlist in .baton/config.json are re-run")


# --- one-line summaries -----------------------------------------------------------------------------------------


def _short(handoff: dict[str, Any] | None) -> str:
    return f"{handoff['short_id']} ({handoff['status']})" if handoff else "none"


def _summarize_status(result: Result) -> str:
    counts = ", ".join(f"{count} {status}" for status, count in result["counts"].items()) or "no handoffs"
    problems = f"; {len(result['problems'])} unreadable" if result["problems"] else ""
    return f"baton: {counts}; latest ready {_short(result['latest_ready'])}{problems}"


def _summarize_capture(result: Result) -> str:
    short = result["handoff"]["short_id"]
    return (f"draft {short} created with {len(result['redactions'])} redaction(s); "
            f"next: handoff_validate ref={short}")


def _verdict(freshness: dict[str, Any] | None) -> str:
    if not freshness:
        return "freshness unknown"
    return "STALE" if freshness.get("stale") else "fresh"


def _summarize_validate(result: Result) -> str:
    validation = result["validation"]
    return (f"{_short(result['handoff'])}: validation {validation['status']}, "
            f"{'can' if validation['can_ready'] else 'cannot'} be made ready, {_verdict(validation['freshness'])}")


def _summarize_ready(result: Result) -> str:
    accepted = " (warnings accepted)" if result["accepted_warnings"] else ""
    return f"{_short(result['handoff'])}: validation {result['validation']['status']}{accepted}"


def _summarize_resume(result: Result) -> str:
    freshness = result["freshness"]
    verdict = _verdict(freshness)
    if freshness["stale"]:
        verdict += f" ({len(freshness['reasons'])} reason(s): verify before acting)"
    brief = result["brief"]
    return (f"resume {_short(result['handoff'])}: {verdict}; brief {brief['tokens']} tokens"
            f"{' (truncated)' if brief['truncated'] else ''}")


def _summarize_list(result: Result) -> str:
    problems = f", {len(result['problems'])} unreadable" if result["problems"] else ""
    return f"{len(result['handoffs'])} handoff(s){problems}"


def _summarize_fork(result: Result) -> str:
    return f"forked {result['parent'][:8]} into draft {result['handoff']['short_id']}"


def _summarize_merge(result: Result) -> str:
    return f"merged {len(result['parents'])} handoffs into draft {result['handoff']['short_id']}"


def _summarize_detect(result: Result) -> str:
    verdict = "handoff recommended" if result["recommend"] else "no handoff needed"
    if result["suppressed_by_cooldown"]:
        verdict += " (suppressed by cooldown)"
    created = f"; draft {result['created']['short_id']} created" if result["created"] else ""
    return f"pressure {result['pressure']:.2f}: {verdict}{created}"


def summarize_error(result: Result) -> str:
    return f"error ({result['error']['kind']}): {result['error']['message']}"


# --- the tools --------------------------------------------------------------------------------------------------


def _run_status(start: Path, _args: StatusArguments, _raw: dict[str, Any]) -> Result:
    return handoffs.status(start)


def _guard_secrets(payload: dict[str, Any], what: str) -> None:
    """An agent pasting a secret is refused by default: field paths only, never the value, nothing written."""
    fields = redact.contains_secret(payload)
    if fields:
        raise PolicyBlocked(
            f"{what} holds secret-like values at {', '.join(fields)}; remove them, or call again with "
            "accept_redactions=true to store the payload with those values redacted")


def _run_capture(start: Path, _args: CaptureArguments, raw: dict[str, Any]) -> Result:
    payload = {key: value for key, value in raw.items() if key != "accept_redactions"}
    _guard_paths(start, payload, "capture")
    if not raw.get("accept_redactions"):
        _guard_secrets(payload, "capture payload")
    return checkpoint_create(start, payload)


def _run_validate(start: Path, args: ValidateArguments, _raw: dict[str, Any]) -> Result:
    _guard_rechecks(start, args.recheck)
    return handoffs.validate_handoff(start, args.ref, recheck=list(args.recheck) or None)


def _run_ready(start: Path, args: ReadyArguments, _raw: dict[str, Any]) -> Result:
    return handoffs.ready_handoff(start, args.ref, accept_warnings=args.accept_warnings)


def _run_resume(start: Path, args: ResumeArguments, _raw: dict[str, Any]) -> Result:
    return handoffs.resume(start, args.ref, format=args.format, mark_resumed=args.mark_resumed,
                             max_tokens=args.max_tokens)


def _run_list(start: Path, args: ListArguments, _raw: dict[str, Any]) -> Result:
    return handoffs.list_handoffs(start, status=args.status)


def _run_fork(start: Path, args: ForkArguments, _raw: dict[str, Any]) -> Result:
    return handoffs.fork(start, args.ref, label=args.label)


def _run_merge(start: Path, args: MergeArguments, _raw: dict[str, Any]) -> Result:
    return handoffs.merge(start, list(args.refs), resolution=args.resolution)


def _run_detect(start: Path, _args: DetectArguments, raw: dict[str, Any]) -> Result:
    payload = raw.get("capture")
    _guard_paths(start, payload, "detect capture")
    return detect.detect(start, event=raw.get("event"), capture_payload=payload)


@dataclass(frozen=True)
class ToolSpec:
    """One MCP tool: its arguments model (the input schema), the operation it runs and its summary line."""

    name: str
    description: str
    arguments: type[BaseModel]
    run: Callable[[Path, Any, dict[str, Any]], Result]
    summarize: Callable[[Result], str]
    read_only: bool = False

    def input_schema(self) -> dict[str, Any]:
        schema = self.arguments.model_json_schema()
        schema.pop("title", None)
        schema.setdefault("properties", {})
        return schema


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("baton_status", "Project handoff status: counts by status, latest ready and draft handoffs. "
             "Call at session start.", StatusArguments, _run_status, _summarize_status, read_only=True),
    ToolSpec("handoff_capture", "Capture the current state as a redacted DRAFT handoff (never ready). Record only "
             "evidence you actually observed; secret-like values are refused unless accept_redactions is true.",
             CaptureArguments, _run_capture,
             _summarize_capture),
    ToolSpec("handoff_validate", "Run the ten validation checks on a handoff; optionally re-run allowlisted "
             "commands as evidence.", ValidateArguments, _run_validate, _summarize_validate),
    ToolSpec("handoff_ready", "Validate and promote a draft to ready (immutable). Warnings need accept_warnings "
             "with a reason.", ReadyArguments, _run_ready, _summarize_ready),
    ToolSpec("handoff_resume", "The resume brief of the latest ready handoff (or ref) with a freshness check; "
             "treat it as working context, not truth, and verify a STALE brief before acting.", ResumeArguments,
             _run_resume, _summarize_resume),
    ToolSpec("handoff_list", "List handoffs (metadata only: ids, status, title, lineage).", ListArguments,
             _run_list, _summarize_list, read_only=True),
    ToolSpec("handoff_fork", "Start a new draft branching from a handoff; the parent stays unchanged.",
             ForkArguments, _run_fork, _summarize_fork),
    ToolSpec("handoff_merge", "Join two or more handoffs into a new draft; refused until a written resolution "
             "is given.", MergeArguments, _run_merge, _summarize_merge),
    ToolSpec("handoff_detect", "Score handoff pressure from detector signals (score, inputs used/unused, "
             "reasons); creates a draft only when capture is given and a handoff is recommended.",
             DetectArguments, _run_detect, _summarize_detect),
)
TOOLS_BY_NAME = {spec.name: spec for spec in TOOLS}


def _argument_error(exc: ValidationError, tool: str) -> UserInputError:
    """Field paths and messages only: the offending value may be a secret, so it is never echoed."""
    problems = []
    for err in exc.errors(include_url=False, include_input=False, include_context=False):
        where = ".".join(str(part) for part in err["loc"]) or "(arguments)"
        problems.append(f"{where}: {err['msg']}")
    return UserInputError(f"invalid arguments for {tool}: " + "; ".join(problems))


def _parsed(spec: ToolSpec, arguments: dict[str, Any]) -> BaseModel:
    try:
        return spec.arguments.model_validate(arguments)
    except ValidationError as exc:
        raise _argument_error(exc, spec.name) from None


def run_tool(name: str, start: Path, arguments: dict[str, Any] | None) -> tuple[Result, str]:
    """Run one tool for the project at ``start``: (result dict, one-line summary). Never raises."""
    spec = TOOLS_BY_NAME.get(name)
    if spec is None:
        error = UserInputError(f"unknown tool {name!r}; available: {', '.join(TOOLS_BY_NAME)}")
        result = results.error_result(error)
        return result, summarize_error(result)
    raw = dict(arguments or {})

    def operation() -> Result:
        return spec.run(start, _parsed(spec, raw), raw)

    result, _code = results.call(operation)
    return result, summarize_error(result) if "error" in result else spec.summarize(result)
