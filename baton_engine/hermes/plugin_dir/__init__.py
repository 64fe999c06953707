"""Baton for Hermes, as a plugin directory ($HERMES_HOME/plugins/baton/): delegates to the installed package.

Install the package first (``pip install baton-engine``); ``baton hermes install`` writes this directory.
"""

from baton_engine.hermes.plugin import register

__all__ = ["register"]
