"""The Baton handoff core: pure, no Hermes import, no network."""
