"""The notebook view of a compiled gradient (``_repr_html_``) and ``show --html``.

The page is parsed with the standard library's HTML parser: it must be well formed, show every
line of the user's function with its file's line number, and link each generated line that comes
from the user's code to that very line. Where a browser is installed (headless Chromium), the page
is also rendered and the text a reader sees is checked; the test skips without one.
"""

import html.parser
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import sourcegrad as sg
from sourcegrad.notebook import page


def loss(w, x):
    h = np.tanh(x @ w)
    for i in range(3):
        if np.sum(h) > i:
            h = h * 0.5
    return np.sum(h * h)


class Page(html.parser.HTMLParser):
    """Rows of both tables: (id, number cell text, link target, code text), and tag balance."""

    VOID = {"meta", "br", "img", "input", "link"}

    def __init__(self):
        super().__init__()
        self.stack, self.unbalanced = [], []
        self.rows, self._row = [], None
        self._cell = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag not in self.VOID:
            self.stack.append(tag)
        if tag == "tr":
            self._row = {"id": attrs.get("id"), "cells": [], "href": None}
        elif tag == "td" and self._row is not None:
            self._row["cells"].append("")
        elif tag == "a" and self._row is not None:
            self._row["href"] = attrs.get("href")

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            self.unbalanced.append(tag)
        if tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._row is not None and self._row["cells"]:
            self._row["cells"][-1] += data


def parsed(text):
    p = Page()
    p.feed(text)
    p.close()
    assert not p.unbalanced and not p.stack, (p.unbalanced, p.stack)
    return p


@pytest.mark.parametrize("make", [sg.grad, sg.value_and_grad, sg.vjp])
def test_the_page_shows_the_function_and_links_each_generated_line_to_its_source(make):
    g = make(loss, wrt=(0,))
    p = parsed(g._repr_html_())
    first = loss.__code__.co_firstlineno
    user = {r["id"]: r for r in p.rows if r["id"]}
    source_lines = [r["cells"][1] for r in user.values()]
    assert (
        source_lines[0].startswith("def loss(w, x):") and "return np.sum(h * h)" in source_lines[-1]
    )
    assert [int(r["cells"][0]) for r in user.values()] == list(range(first, first + len(user)))
    generated = [r for r in p.rows if not r["id"]]
    linked = [r for r in generated if r["href"]]
    assert linked, "no generated line links to the user's code"
    for r in linked:
        target = user[r["href"][1:]]
        assert int(target["cells"][0]) == int(r["cells"][0])  # the number shown is the line linked
    sweeps = [
        r["cells"][1]
        for r in generated
        if r["cells"][0] == "" and r["cells"][1] in ("forward", "backward")
    ]
    assert sweeps == ["forward", "backward"]


def test_the_generated_code_is_shown_as_generated():
    g = sg.grad(loss)
    p = parsed(g._repr_html_())
    shown = [
        r["cells"][1]
        for r in p.rows
        if not r["id"] and r["cells"][1] not in ("forward", "backward")
    ]
    want = [
        re.sub(r"  # [\w.]+:\d+$", "", line) for line in sg.source(g).splitlines()
    ]  # the position: a link
    assert shown == want


def test_show_html_writes_the_page(tmp_path):
    path = os.path.join(os.path.dirname(__file__), "test_notebook.py")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "sourcegrad",
            "show",
            f"{path}:loss",
            "--html",
            "--shapes",
            "3x2,4x3",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.startswith("<!DOCTYPE html>")
    p = parsed(out)
    assert any(r["href"] for r in p.rows)


def _browser():
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _headless(tmp_path, *args):
    """Run headless Chromium with a fresh profile, nothing fetched from the network."""
    profile = tempfile.mkdtemp(dir=tmp_path)
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
    ]
    return subprocess.run(
        [_browser(), *flags, *args], capture_output=True, text=True, timeout=120, check=True
    )


@pytest.mark.skipif(_browser() is None, reason="no headless browser (chromium) installed")
def test_a_browser_renders_the_page(tmp_path):
    path = tmp_path / "loss.html"
    path.write_text(page(sg.grad(loss)))
    dom = _headless(tmp_path, "--dump-dom", path.as_uri()).stdout
    p = parsed(dom)
    assert any("h = np.tanh(x @ w)" in r["cells"][1] for r in p.rows if r["cells"])
    assert any(r["href"] for r in p.rows)
    shot = tmp_path / "loss.png"
    _headless(
        tmp_path,
        "--hide-scrollbars",
        "--window-size=900,500",
        f"--screenshot={shot}",
        path.as_uri(),
    )
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    assert struct.unpack(">II", data[16:24]) == (900, 500)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
