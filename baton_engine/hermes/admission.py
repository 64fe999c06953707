"""Hermes 0.22's plugin admission, as ``baton doctor`` explains it: can ``hermes plugins enable baton`` work here?

What 0.22 does (read in its code: ``hermes_cli.plugins_admission.admit_plugin_set_change`` -> ``pm.client.sync_venv``):
every change of ``plugins.enabled`` / ``plugins.disabled`` made through the plugin manager (``hermes plugins enable``,
``disable``, ``install``, the interactive picker) is resolved by its package manager, which runs on a managed CPython
3.14 (python-build-standalone, or Nous' asset mirror) that it downloads on first use and then resolves packages with
uv. No manifest key (``python_runtime: external`` included) and no setting (``HERMES_DISABLE_LAZY_INSTALLS``,
``security.allow_lazy_installs``) skips it; only a packaged Hermes (Nix, Docker) brings that runtime along. Without
the download the change is refused (``AdmissionRefused: python: install failed``) and config.yaml is left as it was;
Hermes keeps no record of the refusal. Hermes' loader itself reads only config.yaml: a plugin in ``plugins.enabled``
(what ``baton hermes install --select`` writes) loads without admission.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

OFFLINE_WAY = "`baton hermes install --select` (writes plugins.enabled and context.engine; Hermes loads Baton " \
              "without admission)"


@dataclass(frozen=True)
class Admission:
    """Whether this Hermes gates plugin changes on its managed runtime, and whether that runtime is here."""

    gated: bool  # this Hermes has the plugin manager's admission (0.22+)
    runtime: str  # "present", "packaged", "absent" (would be downloaded), "unknown", or "none" (not gated)
    where: str = ""  # the store the managed Python would be installed into

    def enable_hint(self) -> str:
        """The way to enable Baton on this Hermes, in one clause."""
        if not self.gated:
            return "run `hermes plugins enable baton` or `baton hermes install --select`"
        if self.runtime in ("present", "packaged"):
            return f"run `hermes plugins enable baton` (its plugin manager's runtime is here) or {OFFLINE_WAY}"
        return (f"run {OFFLINE_WAY}; `hermes plugins enable baton` on this Hermes first downloads a managed CPython "
                f"(python-build-standalone) into {self.where or 'its tools/ store'} and, offline, fails with "
                "`AdmissionRefused: python: install failed`")


def admission(home: Path) -> Admission:
    """Hermes' own answer for ``home``: its plugin manager's toolchain lookup that never installs anything."""
    try:
        from hermes_constants import reset_hermes_home_override, set_hermes_home_override
        from pm._uv import _toolchain
        from pm.paths import store_root
        from pm.runtime import _resident_runtime
    except ImportError:  # 0.19: `hermes plugins enable` writes config.yaml itself
        return Admission(gated=False, runtime="none")
    token = set_hermes_home_override(home)
    try:
        where = str(store_root())
        if _resident_runtime() is not None:
            return Admission(gated=True, runtime="packaged", where=where)
        return Admission(gated=True, runtime="absent" if _toolchain(realize=False) is None else "present",
                         where=where)
    # Hermes' private lookups (its install stamp, lockfile and store): a failure of them leaves the answer open,
    # never a failed doctor
    except Exception:  # noqa: BLE001
        return Admission(gated=True, runtime="unknown")
    finally:
        reset_hermes_home_override(token)


def load_gate(manifest: dict[str, Any]) -> str | None:
    """Why this Hermes' loader would skip a plugin directory with ``manifest`` (its ``requires_hermes`` rejecting the
    running version: 0.22's ``plugins_manifest.requires_hermes_error``), None when it loads it or has no such gate."""
    try:
        from hermes_cli.plugins_manifest import requires_hermes_error
    except ImportError:  # 0.19: no gate
        return None
    try:
        return requires_hermes_error(manifest)
    # Hermes' own version lookup (its build info): a failure of it leaves the answer open, never a failed doctor
    except Exception:  # noqa: BLE001
        return None
