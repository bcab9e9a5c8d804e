"""Helpers of the browser tests (tests/ui/*_ui.py), importable as ``tests.ui.harness``.

* :func:`jupyter_env` and :func:`serve`: a Jupyter server isolated in a temporary folder (every
  Jupyter, JupyterLab, IPython and XDG directory there; nothing read from or written to the home
  folder), started from this interpreter on a free port;
* :class:`Lab`: one Playwright page showing JupyterLab (Debian's ``/usr/bin/chromium``; no
  browser download): open a notebook, run all cells, run code in the notebook's kernel and read
  what it prints, drag with the real mouse, save a screenshot to ``tests/ui/screenshots``;
* :func:`missing`: why the browser tests cannot run here (``None`` when they can).

The fixtures built on them (``lab``, ``browser``, ``page``) are in ``tests/ui/conftest.py``.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
NOTEBOOKS = HERE / "notebooks"
SCREENSHOTS = HERE / "screenshots"
CHROMIUM = os.environ.get("RELVIZ_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "NOTEBOOKS", "SCREENSHOTS", "Lab", "jupyter_env", "missing", "serve"]


def missing() -> str | None:
    """Why the browser tests cannot run here (Chromium, Playwright or JupyterLab missing), or ``None``."""
    if not Path(CHROMIUM).exists():
        return f"Chromium not found at {CHROMIUM} (apt-get install -y chromium)"
    for mod, pip in (("playwright", "playwright"), ("jupyterlab", "jupyterlab"), ("ipykernel", "ipykernel")):
        try:
            __import__(mod)
        except ImportError:
            return f"{mod} is not installed (pip install {pip})"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def jupyter_env(base: Path, **extra: str) -> dict[str, str]:
    """Environment for a Jupyter server isolated in ``base``: every Jupyter, IPython and XDG
    directory is a fresh folder there (nothing read from or written to the home folder)."""
    names = ("config", "data", "runtime", "ipython", "xdg_config", "xdg_cache")
    dirs = {n: base / n for n in names}
    for d in dirs.values():
        d.mkdir(exist_ok=True)
    return {**os.environ,
            "JUPYTER_CONFIG_DIR": str(dirs["config"]), "JUPYTER_DATA_DIR": str(dirs["data"]),
            "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]), "IPYTHONDIR": str(dirs["ipython"]),
            "XDG_CONFIG_HOME": str(dirs["xdg_config"]), "XDG_CACHE_HOME": str(dirs["xdg_cache"]),
            "JUPYTER_PLATFORM_DIRS": "1", **extra}


@contextlib.contextmanager
def serve(argv: list[str], *, env: dict[str, str], cwd: Path, log_path: Path, what: str) -> Iterator[str]:
    """Start ``python -m <argv> --port=<free port>``, wait (≤ 60 s) until ``/api/status`` answers,
    yield the base URL (no trailing slash), terminate the server on exit. Fails the test with the
    end of the server's log when it does not come up."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", *argv, f"--port={port}"], env=env, cwd=cwd,
                                stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.time() + 60
            while True:
                try:
                    with urllib.request.urlopen(f"{url}/api/status", timeout=2):
                        break
                except urllib.error.HTTPError:
                    break  # the server answers
                except OSError:
                    pass
                if proc.poll() is not None or time.time() > deadline:
                    pytest.fail(f"{what} did not start:\n" + log_path.read_text()[-3000:])
                time.sleep(0.25)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()


class Lab:
    """Helpers around one Playwright page showing JupyterLab."""

    def __init__(self, page: Any, url: str) -> None:
        self.page = page
        self.url = url
        self.timings: dict[str, float] = {}

    def open(self, notebook: str) -> None:
        """Open ``notebook`` (a file in the server root) in a fresh workspace; wait for an idle kernel."""
        t0 = time.perf_counter()
        self.page.goto(f"{self.url}/lab/tree/{notebook}?reset")
        self.page.wait_for_selector(".jp-NotebookPanel .jp-Notebook", timeout=60_000)
        self.page.wait_for_function(
            """() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
                       const k = w && w.sessionContext && w.sessionContext.session &&
                                 w.sessionContext.session.kernel;
                       return !!k && k.connectionStatus === 'connected' && k.status === 'idle'; }""",
            timeout=60_000)
        self.page.evaluate("() => window.jupyterapp.shell.collapseLeft()")  # room for the widgets
        self.timings["open"] = time.perf_counter() - t0

    def run_all(self, wait_for: str | None = None, timeout: float = 120_000) -> None:
        """Run every cell; wait until the kernel is idle again (and ``wait_for`` is visible)."""
        t0 = time.perf_counter()
        self.page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        self.page.wait_for_function(
            """() => { const w = window.jupyterapp.shell.currentWidget;
                       const cells = w.content.widgets.filter(c => c.model.type === 'code');
                       return cells.length && cells.every(c => c.model.executionCount !== null) &&
                              w.sessionContext.session.kernel.status === 'idle'; }""",
            timeout=timeout)
        if wait_for:
            self.page.wait_for_selector(wait_for, timeout=timeout)
        self.timings["run_all"] = time.perf_counter() - t0

    def kernel(self, code: str, timeout: float = 60_000) -> str:
        """Run ``code`` in the open notebook's kernel (no new cell); return what it printed.

        Raises:
            AssertionError: with the traceback when the code raises.
        """
        out = self.page.evaluate(
            """async (code) => {
                 const k = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
                 const f = k.requestExecute({ code, store_history: false, silent: false });
                 let out = '', err = null;
                 f.onIOPub = (m) => {
                   const t = m.header.msg_type;
                   if (t === 'stream') out += m.content.text;
                   else if (t === 'execute_result') out += m.content.data['text/plain'] + '\\n';
                   else if (t === 'error') err = m.content.ename + ': ' + m.content.evalue + '\\n' +
                                                m.content.traceback.join('\\n');
                 };
                 await f.done;
                 return { out, err };
               }""", code)
        assert out["err"] is None, out["err"]
        return out["out"]

    def screenshot(self, name: str, locator: Any | None = None) -> Path:
        SCREENSHOTS.mkdir(exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        (locator or self.page).screenshot(path=str(path))
        return path

    def drag(self, source: Any, target: Any, steps: int = 25) -> None:
        """Press the real mouse on ``source``'s centre, move onto ``target``'s centre, release.

        The pointer rests on the target for a while and wiggles there, so that edgehandles'
        snapping timer (15 Hz) and hover delay see it even on a loaded machine.
        """
        a, b = source.bounding_box(), target.bounding_box()
        assert a and b, "element not visible"
        ax, ay = a["x"] + a["width"] / 2, a["y"] + a["height"] / 2
        bx, by = b["x"] + b["width"] / 2, b["y"] + b["height"] / 2
        m = self.page.mouse
        m.move(ax, ay)
        self.page.wait_for_timeout(100)
        m.down()
        self.page.wait_for_timeout(100)
        m.move(ax + 4, ay + 4, steps=4)
        m.move(bx, by, steps=steps)
        for dx in (3, -3, 2, -2, 0):
            self.page.wait_for_timeout(150)
            m.move(bx + dx, by + dx, steps=2)
        self.page.wait_for_timeout(300)
        m.up()
