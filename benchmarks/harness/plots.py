"""One plot of the report: a figure drawn off screen, labelled, written and closed."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def figure(width: float) -> tuple[Any, Any]:
    """A new figure and its axis, drawn without a display."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, 4.2))


def saved(figure: Any, axis: Any, path: Path, xlabel: str, ylabel: str, title: str) -> str:
    """Label, lay out, write and close one plot; its file name."""
    import matplotlib.pyplot as plt

    axis.set_xlabel(xlabel)
    axis.set_ylabel(ylabel)
    axis.set_title(title)
    axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path.name
