"""The retention a session's metrics log starts with by default (the ``metrics_*`` settings' defaults), as the
Hermes adapter passes it."""

from __future__ import annotations

from baton_engine.metrics.log import Retention
from baton_engine.settings import BatonSettings

_DEFAULTS = BatonSettings()
RETENTION = Retention(_DEFAULTS.metrics_max_age_days, _DEFAULTS.metrics_max_total_mb, _DEFAULTS.metrics_live_hours)
