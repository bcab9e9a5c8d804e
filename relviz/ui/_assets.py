"""Where the widgets' front-end files (bundled ES modules and CSS) are found.

The sources, the build script and the committed bundles live in the top-level ``widgets/`` folder
of the repository. A wheel ships the bundles as data files, installed under
``<prefix>/share/relviz/widgets/`` (see ``[tool.setuptools.data-files]`` in ``pyproject.toml``);
an editable install reads them from the checkout. ``RELVIZ_WIDGETS_DIR`` overrides both (front-end
development: with ``ANYWIDGET_HMR=1`` anywidget reloads a bundle when it is rebuilt).
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
from pathlib import Path

__all__ = ["widgets_dir", "asset"]

_PROBE = "schema_editor.js"


def _candidates() -> list[Path]:
    out = []
    env = os.environ.get("RELVIZ_WIDGETS_DIR")
    if env:
        out.append(Path(env))
    out.append(Path(__file__).resolve().parents[2] / "widgets")  # source checkout / editable
    bases = [sysconfig.get_path("data"), sys.prefix, sys.base_prefix]
    try:
        bases.append(site.getuserbase())
    except AttributeError:  # pragma: no cover - embedded interpreters
        pass
    out += [Path(b) / "share" / "relviz" / "widgets" for b in bases if b]
    return out


def widgets_dir() -> Path:
    """The folder holding the bundled widget files.

    Raises:
        FileNotFoundError: when no candidate folder holds the bundles (naming every folder tried).
    """
    tried = _candidates()
    for d in tried:
        if (d / _PROBE).is_file():
            return d
    raise FileNotFoundError("relviz widget bundles not found; looked in: "
                            + ", ".join(str(d) for d in tried)
                            + " (in a checkout, build them with `sh widgets/build.sh`)")


def asset(name: str) -> Path:
    """Path of one front-end file, e.g. ``asset("schema_editor.js")``."""
    p = widgets_dir() / name
    if not p.is_file():
        raise FileNotFoundError(f"relviz widget file {name!r} not found in {p.parent}")
    return p
