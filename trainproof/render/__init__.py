"""Renderers: each turns a Report into text for one target and touches nothing else.

``RENDERERS`` maps an output name to the module that renders it; a module is
imported only when its output is asked for, so the plain-text path never
loads jinja2 or markdown.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

from trainproof.report import Report

RENDERERS: Mapping[str, str] = {
    "text": "trainproof.render.text",
    "json": "trainproof.render.json",
    "html": "trainproof.render.html",
    "sarif": "trainproof.render.sarif",
    "junit": "trainproof.render.junit",
    "markdown": "trainproof.render.markdown",
}

Renderer = Callable[..., str]


def renderer(name: str) -> Renderer:
    """The ``render(report, **options) -> str`` function of one output."""
    return importlib.import_module(RENDERERS[name]).render


def render(name: str, report: Report, **options: object) -> str:
    return renderer(name)(report, **options)
