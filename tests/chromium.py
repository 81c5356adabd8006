"""Headless Chromium for the tests that need a browser's own decoders and renderers: a page loaded, a script's
promise awaited through the DevTools protocol over a pipe (``--remote-debugging-pipe``: no port, no network)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync")  # fmt: skip


def chromium() -> str | None:
    return next((found for name in ("chromium", "chromium-browser", "google-chrome") if (found := shutil.which(name))), None)


def evaluate(page: Path, expression: str, profile: Path, timeout: float = 120.0) -> Any:
    """The value of ``expression`` (a promise is awaited) in ``page`` once it has loaded, or an AssertionError with the
    exception it threw."""
    browser = chromium()
    assert browser is not None, "no Chromium"
    to_browser, from_us = os.pipe()
    to_us, from_browser = os.pipe()

    def pipes() -> None:  # the protocol's pipe: the browser reads fd 3 and writes fd 4
        os.dup2(to_browser, 3)
        os.dup2(from_browser, 4)

    proc = subprocess.Popen([browser, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe", page.as_uri()],
                            pass_fds=(3, 4), preexec_fn=pipes, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    os.close(to_browser)
    os.close(from_browser)
    pending = b""
    counter = iter(range(1, 1 << 30))
    deadline = time.monotonic() + timeout

    def call(method: str, params: dict | None = None, session: str | None = None) -> dict:
        nonlocal pending
        number = next(counter)
        message: dict[str, Any] = {"id": number, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(from_us, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in pending:
                assert time.monotonic() < deadline, f"Chromium took over {timeout} s"
                chunk = os.read(to_us, 1 << 16)
                assert chunk, "Chromium closed its pipe"
                pending += chunk
            raw, pending = pending.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == number:
                assert "error" not in reply, reply["error"]
                return reply["result"]

    try:
        while not (pages := [t for t in call("Target.getTargets")["targetInfos"] if t["type"] == "page"]):
            time.sleep(0.05)
        session = call("Target.attachToTarget", {"targetId": pages[0]["targetId"], "flatten": True})["sessionId"]
        loaded = f"document.readyState === 'complete' && document.URL === {json.dumps(page.as_uri())}"
        while not call("Runtime.evaluate", {"expression": loaded, "returnByValue": True}, session)["result"].get("value"):
            time.sleep(0.05)
        done = call("Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True}, session)
        assert "exceptionDetails" not in done, done["exceptionDetails"]
        return done["result"].get("value")
    finally:
        proc.kill()
        proc.wait()
        os.close(from_us)
        os.close(to_us)
