"""The documentation site (mkdocs.yml, docs/): built strictly, served on loopback, and its home page and the pytest
plugin's reference page loaded in Debian's headless chromium, driven over the DevTools protocol (websockets): no
console errors, no uncaught exceptions, no failed loads; a screenshot of each is kept in build/artifacts/docs-site/.

Skips, saying what to install, without mkdocs (the `docs` extra), websockets or chromium (.ci/install.sh)."""

from __future__ import annotations

import asyncio
import base64
import functools
import http.server
import json
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "build" / "artifacts" / "docs-site"
PAGES = {"home": "", "pytest-plugin": "pytest-plugin/"}

websockets = pytest.importorskip("websockets", reason="pip install -e '.[test]' (websockets drives chromium)")
pytest.importorskip("mkdocs", reason="pip install -e '.[docs]'")
pytest.importorskip("mkdocstrings", reason="pip install -e '.[docs]'")


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no chromium: apt-get install chromium (.ci/install.sh does)")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The site built with --strict into a temporary directory and served on loopback; yields its base URL."""
    out = tmp_path_factory.mktemp("site")
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                           cwd=ROOT, capture_output=True, text=True, timeout=300,
                           env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})
    assert build.returncode == 0, f"mkdocs build --strict failed:\n{build.stdout}\n{build.stderr}"
    handler = functools.partial(_QuietHandler, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="docs-site", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Headless chromium with a DevTools port; yields the DevTools HTTP address. Stopped by its PID."""
    profile = tmp_path_factory.mktemp("chromium-profile")
    proc = subprocess.Popen(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
         "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", f"--user-data-dir={profile}",
         "--window-size=1280,900", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().strip()):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"chromium did not open its DevTools port (exit {proc.poll()})")
            time.sleep(0.1)
        yield f"127.0.0.1:{port_file.read_text().split()[0]}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def _load(devtools: str, url: str, screenshot: Path) -> list[str]:
    """Opens `url` in a new tab, waits for its load and a moment after (scripts that run late), saves a
    screenshot, and returns every console error, uncaught exception and failed load the page had."""
    req = urllib.request.Request(f"http://{devtools}/json/new?about:blank", method="PUT")
    with urllib.request.urlopen(req, timeout=10) as r:
        target = json.load(r)
    problems: list[str] = []
    async with websockets.connect(target["webSocketDebuggerUrl"], max_size=64 * 1024 * 1024) as ws:
        ids = iter(range(1, 1_000_000))
        waiting: dict[int, asyncio.Future[Any]] = {}
        loaded = asyncio.get_running_loop().create_future()

        async def reader() -> None:
            async for raw in ws:
                msg = json.loads(raw)
                if "id" in msg and msg["id"] in waiting:
                    waiting.pop(msg["id"]).set_result(msg)
                    continue
                method, params = msg.get("method"), msg.get("params", {})
                if method == "Runtime.exceptionThrown":
                    details = params["exceptionDetails"]
                    problems.append(f"exception: {details.get('exception', {}).get('description') or details}")
                elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                    problems.append("console.error: " + " ".join(str(a.get("value", a.get("description")))
                                                                  for a in params.get("args", [])))
                elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                    entry = params["entry"]
                    problems.append(f"log: {entry.get('text')} {entry.get('url', '')}".strip())
                elif method == "Network.loadingFailed" and not params.get("canceled"):
                    problems.append(f"load failed: {params.get('errorText')} ({params.get('type')})")
                elif method == "Page.loadEventFired" and not loaded.done():
                    loaded.set_result(None)

        async def call(method: str, **params: Any) -> dict[str, Any]:
            n = next(ids)
            waiting[n] = asyncio.get_running_loop().create_future()
            await ws.send(json.dumps({"id": n, "method": method, "params": params}))
            answer = await asyncio.wait_for(waiting[n], 30)
            assert "error" not in answer, f"{method}: {answer['error']}"
            return answer.get("result", {})

        task = asyncio.create_task(reader())
        try:
            for domain in ("Runtime", "Log", "Page", "Network"):
                await call(f"{domain}.enable")
            await call("Page.navigate", url=url)
            await asyncio.wait_for(loaded, 30)
            await asyncio.sleep(1.0)
            title = (await call("Runtime.evaluate", expression="document.title"))["result"].get("value", "")
            if "fakekafka" not in title:
                problems.append(f"unexpected title {title!r}")
            shot = await call("Page.captureScreenshot", format="png", captureBeyondViewport=False)
            screenshot.write_bytes(base64.b64decode(shot["data"]))
        finally:
            task.cancel()
    with urllib.request.urlopen(f"http://{devtools}/json/close/{target['id']}", timeout=10):
        pass
    return problems


@pytest.mark.parametrize("page", list(PAGES))
def test_page_renders_without_console_errors(site: str, browser: str, page: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    screenshot = ARTIFACTS / f"{page}.png"
    problems = asyncio.run(_load(browser, site + PAGES[page], screenshot))
    assert problems == [], f"{site + PAGES[page]}: {problems}"
    assert screenshot.stat().st_size > 10_000  # a rendered page, not a blank one
