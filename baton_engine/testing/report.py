"""What the kit hands back: one line per check (passed, failed, skipped or info) with a how-to-fix line.

Why a plain dataclass and not pytest's machinery: the same report is printed by ``baton tokens check``
(text or ``--json``) and raised by ``assert_conformant`` inside an author's own test suite. Details carry
counts, corpus item names and exception type names only, never prompt text or exception messages.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

PASS, FAIL, SKIPPED, INFO = "pass", "fail", "skipped", "info"


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    detail: str
    fix: str = ""


@dataclass(frozen=True)
class Report:
    backend: str
    reference: str | None
    checks: tuple[Check, ...]
    speed: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed

    @property
    def failed(self) -> tuple[Check, ...]:
        return tuple(check for check in self.checks if check.status == FAIL)

    def check(self, name: str) -> Check:
        return next(check for check in self.checks if check.name == name)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "backend": {"source": self.backend},
                "reference": None if self.reference is None else {"source": self.reference},
                "checks": [asdict(check) for check in self.checks], "speed": dict(self.speed)}

    def text(self) -> str:
        lines = [f"conformance of {self.backend}" + (f" (reference {self.reference})" if self.reference else "")]
        for check in self.checks:
            lines.append(f"  {check.status:<7} {check.name}: {check.detail}")
            if check.fix:
                lines.append(f"          how to fix: {check.fix}")
        lines.append("all checks passed" if self.ok else f"{len(self.failed)} check(s) failed")
        return "\n".join(lines)
