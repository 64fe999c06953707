"""Errors shared by the CLI, the engine tools and the MCP server, with the spec's exit codes."""

from __future__ import annotations


class BatonError(Exception):
    """Base: a clear message saying what is wrong and how to fix it. Never contains secrets."""

    exit_code = 1
    kind = "error"


class UserInputError(BatonError):
    exit_code = 2
    kind = "input_error"


class ValidationFailed(BatonError):
    exit_code = 3
    kind = "validation_failed"


class NotFoundError(BatonError):
    exit_code = 4
    kind = "not_found"


class ConflictError(BatonError):
    exit_code = 4
    kind = "conflict"


class PolicyBlocked(BatonError):
    exit_code = 5
    kind = "policy_blocked"
