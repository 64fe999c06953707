"""The operations layer: one function per ``baton`` command, each returning a JSON-able dict.

Why one layer: the CLI, the Hermes engine tools and the MCP server must give the same answer for the same
request, so they all call these functions and print the dict as it is (the shape, and ``call``, the runner
that never raises, are ``baton_engine.results``). Failures are raised as ``BatonError`` subclasses (exit
codes 2/3/4/5). One module per job: ``handoffs`` (the project and handoff commands), ``detect`` (handoff
pressure and the detector's cooldown file), ``doctor`` (the core's health checks), ``maintenance`` (gc,
audit, migrate, report) and ``context`` (the settings and counter an operation runs with). The checkpoint
command lives one layer down, in ``handoff/checkpoint.py``: a session's draft in the compaction core
creates one too.

Every ``start`` argument is a directory inside the project (``handoff/project.py``). Result keys (all
results start with ``"ok"``):

- errors: ``{"ok": false, "error": {"kind", "message"}}`` plus any ``exc.details`` keys (e.g. ``validation``).
- ``handoff`` entries (``handoff/summary.summary_of``): ``{"id", "short_id", "status", "title", "created_at",
  "updated_at", "relation", "parents", "owner"}`` (``owner``: ``{"platform", "conversation_id"}`` or null).
- init: ``{"ok", "root", "data_dir", "created", "migrated", "config"}``.
- status: ``{"ok", "root", "data_dir", "legacy", "scope", "counts", "latest_ready", "latest_draft", "problems"}``
  (``scope``: ``{"kind": "project"}`` or the owner it is limited to).
- checkpoint_create: ``{"ok", "handoff", "path", "redactions"}``.
- record_item: ``{"ok", "handoff", "kind", "item", "redactions"}``.
- validate_handoff: ``{"ok", "handoff", "validation": {"status", "can_ready", "checks", "rechecks",
  "rejected_rechecks", "freshness"}}``; on failure the error dict carries ``handoff`` and ``validation`` too.
- ready_handoff: ``{"ok", "handoff", "validation", "accepted_warnings"}``.
- list_handoffs: ``{"ok", "handoffs", "problems"}``.
- show_handoff: ``{"ok", "handoff", "format", "content"}`` (``content`` is the record dict for ``json``,
  text otherwise).
- resume: ``{"ok", "handoff", "freshness", "brief": {"text", "tokens", "truncated", "counter_source"},
  "marked_resumed", "record"}`` (``record`` only with ``format="json"``).
- fork: ``{"ok", "handoff", "parent"}``; merge: ``{"ok", "handoff", "parents"}``.
- detect: ``{"ok", "pressure", "recommend", "auto_prepare", "readiness", "inputs_used", "inputs_unused",
  "terms", "reasons", "suppressed_by_cooldown", "cooldown_remaining_seconds", "latest_draft", "created",
  "redactions"}`` (``created`` is the captured draft with ``--capture``, else null).
- doctor: ``{"ok", "checks": [{"name", "status", "detail"}]}``.
- gc: ``{"ok", "removed", "dry_run"}``; audit: ``{"ok", "handoffs", "by_status", "redactions",
  "external_refs", "sensitive_artifacts", "problems"}``; migrate: ``{"ok", "dry_run", "legacy_dir", "target_dir",
  "records", "rewritten"}``.
"""
