"""Fixtures of the browser tests (``tests/ui/*_ui.py``): one headless JupyterLab per session, driven by
Chromium. The helpers they use are in ``tests/ui/harness.py``.

* ``lab``: starts ``jupyter lab`` from this interpreter on a free port with every Jupyter,
  JupyterLab, IPython and XDG directory in a temporary folder (nothing is read from or written to
  the home folder), no token, the news/update notification silenced through a user setting, and
  ``window.jupyterapp`` exposed so a test can run JupyterLab commands. The test notebooks
  (``tests/ui/notebooks``) are copied into the server's root.
* ``page``: a fresh Chromium page with the helpers of :class:`~tests.ui.harness.Lab`.

Every browser test (a file ``tests/ui/*_ui.py``) is marked ``ui`` and skipped, with the reason,
when Chromium, Playwright or JupyterLab is missing. Install them with
``apt-get install -y chromium`` and ``pip install -e '.[test]'``. The other tests here (the
widgets' plain-Python state and traits) need no browser and are not marked.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ui.harness import CHROMIUM, CHROMIUM_ARGS, NOTEBOOKS, Lab, jupyter_env, missing, serve

HERE = Path(__file__).parent


def _is_browser_test(item: pytest.Item) -> bool:
    path = Path(str(item.fspath))
    return HERE in path.parents and path.name.endswith("_ui.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = missing()
    for item in items:
        if _is_browser_test(item):
            item.add_marker(pytest.mark.ui)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A running JupyterLab server: ``{"url", "root", "log"}``."""
    base = tmp_path_factory.mktemp("jupyterlab")
    root = base / "root"
    shutil.copytree(NOTEBOOKS, root, ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
    settings, workspaces = base / "settings", base / "workspaces"
    workspaces.mkdir()
    note = settings / "@jupyterlab" / "apputils-extension"
    note.mkdir(parents=True)
    (note / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    env = jupyter_env(base, JUPYTERLAB_SETTINGS_DIR=str(settings),
                      JUPYTERLAB_WORKSPACES_DIR=str(workspaces), PYTHONPATH=str(root),
                      MPLBACKEND="Agg", PYDEVD_DISABLE_FILE_VALIDATION="1")
    argv = ["jupyterlab", "--allow-root", "--no-browser",
            "--ServerApp.ip=127.0.0.1", "--ServerApp.token=", "--ServerApp.password=",
            "--ServerApp.disable_check_xsrf=True", f"--ServerApp.root_dir={root}",
            "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=",
            f"--LabApp.user_settings_dir={settings}", f"--LabApp.workspaces_dir={workspaces}"]
    log = base / "jupyterlab.log"
    with serve(argv, env=env, cwd=root, log_path=log, what="JupyterLab") as url:
        yield {"url": url, "root": root, "log": log}


@pytest.fixture(scope="session")
def browser(lab: dict[str, Any]) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture()
def page(browser: Any, lab: dict[str, Any]) -> Iterator[Lab]:
    ctx = browser.new_context(viewport={"width": 1500, "height": 1300}, device_scale_factor=1)
    p = ctx.new_page()
    p.set_default_timeout(30_000)
    try:
        yield Lab(p, lab["url"])
    finally:
        try:
            p.evaluate("""() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
                                 return w && w.sessionContext ? w.sessionContext.shutdown() : null; }""")
        except Exception:  # noqa: BLE001 - best effort; the server is stopped at session end anyway
            pass
        ctx.close()
