"""No widget callback's exception may vanish: log it, and show it in the panel it broke.

ipywidgets and anywidget run observers and button handlers in the kernel's comm handler, where an
exception goes to the kernel's log at best, and the panel just stops answering. Every relviz panel
runs its callbacks under :func:`guard`: the exception is logged (``logging``, logger
``relviz.ui``: with no handler configured Python writes it, with its traceback, to stderr, which
JupyterLab shows in the notebook's log console) and a one-line message is shown in the panel.
"""

from __future__ import annotations

import contextlib
import functools
import html
import logging
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

__all__ = ["error_html", "error_text", "guard", "guarded", "log"]

F = TypeVar("F", bound=Callable[..., Any])

log = logging.getLogger("relviz.ui")


def error_text(where: str, e: BaseException) -> str:
    """One line for the user: what failed, the exception, and where the details went."""
    return (f"internal error while {where}: {type(e).__name__}: {e}. Nothing else changed; the details "
            "are in the notebook's log (logger 'relviz.ui')")


def error_html(where: str, e: BaseException) -> str:
    """:func:`error_text` as a red box (for ipywidgets ``HTML``)."""
    return ("<div class='relviz-ui-error' style='font-size:12px;line-height:1.4;"
            "color:var(--jp-error-color1, #d32f2f);border-left:4px solid var(--jp-error-color1, #d32f2f);"
            f"padding:4px 8px;margin:4px 0'>✗ {html.escape(error_text(where, e))}</div>")


@contextlib.contextmanager
def guard(where: str, show: Callable[[BaseException], None] | None = None) -> Iterator[None]:
    """Run a widget callback: log any exception (with its traceback) and hand it to ``show``.

    Args:
        where: What the callback was doing, in words ("applying the edit", "launching the run").
        show: Puts the error in the panel (called with the exception); its own failure is logged.
    """
    try:
        yield
    except Exception as e:  # noqa: BLE001 - shown and logged, never swallowed silently
        log.exception("relviz: internal error while %s", where)
        if show is not None:
            try:
                show(e)
            except Exception:  # noqa: BLE001
                log.exception("relviz: could not show the error of %s", where)


def guarded(where: str) -> Callable[[F], F]:
    """Decorate a panel's callback method: run it under :func:`guard`, showing the error with the
    panel's ``_show_error(where, exception)``."""
    def deco(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            with guard(where, lambda e: self._show_error(where, e)):
                return fn(self, *args, **kwargs)
            return None
        return wrapper  # type: ignore[return-value]
    return deco
