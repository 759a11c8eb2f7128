"""Open a page in headless Chromium and report what a person would see: its text, its console errors, the requests
it made, a screenshot. Drives Debian's `chromium` through the DevTools protocol with a websocket client of a few
lines on the standard library (no new dependency: the protocol needs only text frames).

    page = open_page(Path("report.html"), screenshot=Path("shot.png"))
    page.errors    # console errors, uncaught exceptions, failed loads: [] for a clean page
    page.text      # document.body.innerText
    page.requests  # every URL the page asked for (a self-contained page: only itself)

`chromium_missing()` says why the browser cannot run here (None when it can): the tests skip with that reason.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

INSTALL_HINT = "apt-get install -y chromium"  # Debian's package; the test set-up installs it
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
TIMEOUT_SECONDS = 60.0


def chromium_binary() -> str | None:
    """The path of a Chromium on PATH (or $DSASIM_CHROMIUM), None if none."""
    given = os.environ.get("DSASIM_CHROMIUM")
    if given:
        return shutil.which(given)
    return next((found for found in map(shutil.which, CHROMIUM_NAMES) if found), None)


def chromium_missing() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if chromium_binary() is None:
        return f"headless Chromium is not installed (install it with `{INSTALL_HINT}`, or set DSASIM_CHROMIUM)"
    return None


@dataclass(frozen=True)
class PageReport:
    """What the browser saw of one page."""

    text: str  # document.body.innerText: the text as laid out (folded <details> bodies are not in it)
    errors: tuple[str, ...]  # console.error/assert messages, uncaught exceptions, log entries of level error
    requests: tuple[str, ...]  # every URL requested, the page's own first
    title: str


class _WebSocket:
    """A client websocket (RFC 6455) enough for the DevTools protocol: text frames out (masked), frames in."""

    def __init__(self, url: str) -> None:
        m = re.fullmatch(r"ws://([^:/]+):(\d+)(/.*)", url)
        if m is None:
            raise ValueError(f"not a ws:// URL: {url}")
        host, port, path = m.group(1), int(m.group(2)), m.group(3)
        self.sock = socket.create_connection((host, port), timeout=TIMEOUT_SECONDS)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
                          .encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("the browser closed the connection during the websocket handshake")
            head += chunk
        status = head.split(b"\r\n", 1)[0]
        if b" 101 " not in status:
            raise ConnectionError(f"websocket handshake refused: {status.decode(errors='replace')}")
        self.buffer = head.split(b"\r\n\r\n", 1)[1]

    def _read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("the browser closed the DevTools connection")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def send(self, text: str) -> None:
        payload = text.encode()
        n = len(payload)
        header = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else
                                  bytes([0x80 | 126]) + struct.pack(">H", n) if n < 1 << 16 else
                                  bytes([0x80 | 127]) + struct.pack(">Q", n))
        mask = os.urandom(4)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def receive(self) -> str:
        message = b""
        while True:
            first, second = self._read(2)
            n = second & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            mask = self._read(4) if second & 0x80 else None
            data = self._read(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            opcode = first & 0x0F
            if opcode == 0x8:
                raise ConnectionError("the browser closed the DevTools connection")
            if opcode in (0x9, 0xA):  # ping, pong: not part of a message
                continue
            message += data
            if first & 0x80:
                return message.decode()

    def close(self) -> None:
        self.sock.close()


class _DevTools:
    """Commands to one page target; events are kept as they arrive."""

    def __init__(self, url: str) -> None:
        self.ws = _WebSocket(url)
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.receive())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"DevTools {method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def wait_for(self, event: str, seconds: float = TIMEOUT_SECONDS) -> None:
        deadline = time.monotonic() + seconds
        while not any(e["method"] == event for e in self.events):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {event} within {seconds:g} s")
            message = json.loads(self.ws.receive())
            if "method" in message:
                self.events.append(message)


def _errors(events: list[dict[str, Any]]) -> tuple[str, ...]:
    """The console errors among DevTools events."""
    found = []
    for e in events:
        p = e.get("params", {})
        if e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            found.append("console." + p["type"] + ": " + " ".join(str(a.get("value", a.get("description", "")))
                                                                   for a in p.get("args", [])))
        elif e["method"] == "Runtime.exceptionThrown":
            details = p.get("exceptionDetails", {})
            found.append("exception: " + str(details.get("exception", {}).get("description") or details.get("text")))
        elif e["method"] == "Network.loadingFailed":
            found.append(f"failed to load ({p.get('errorText')}): {p.get('requestId')}")
        elif e["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            entry = p["entry"]
            found.append(f"{entry.get('source')}: {entry.get('text')} {entry.get('url', '')}".strip())
    return tuple(found)


def open_page(path: Path, screenshot: Path | None = None, width: int = 1280, height: int = 1600) -> PageReport:
    """Load `path` (file:// URL) in headless Chromium, wait for its load event, and report its text, errors and
    requests; `screenshot`: a PNG of the top `height` pixels at `width` written there."""
    binary = chromium_binary()
    if binary is None:
        raise RuntimeError(chromium_missing())
    with tempfile.TemporaryDirectory(prefix="dsasim-chromium-") as profile:
        process = subprocess.Popen(
            [binary, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--no-default-browser-check",
             "--hide-scrollbars", f"--user-data-dir={profile}", "--remote-debugging-port=0",
             f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            port_file = Path(profile) / "DevToolsActivePort"  # Chromium writes its port here once listening
            deadline = time.monotonic() + TIMEOUT_SECONDS
            while not (port_file.exists() and port_file.read_text().strip()):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{binary} did not start its DevTools server (exit status {process.poll()})")
                time.sleep(0.05)
            port = int(port_file.read_text().split()[0])
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=TIMEOUT_SECONDS) as reply:
                targets = json.load(reply)
            target = next(t for t in targets if t.get("type") == "page")
            tools = _DevTools(target["webSocketDebuggerUrl"])
            try:
                for domain in ("Page", "Runtime", "Log", "Network"):
                    tools.call(f"{domain}.enable")
                tools.events.clear()  # about:blank's own events
                tools.call("Page.navigate", url=path.resolve().as_uri())
                tools.wait_for("Page.loadEventFired")
                text = tools.call("Runtime.evaluate", expression="document.body ? document.body.innerText : ''",
                                  returnByValue=True)["result"].get("value", "")
                title = tools.call("Runtime.evaluate", expression="document.title",
                                   returnByValue=True)["result"].get("value", "")
                if screenshot is not None:
                    shot = tools.call("Page.captureScreenshot", format="png")
                    screenshot.write_bytes(base64.b64decode(shot["data"]))
                requests = tuple(e["params"]["request"]["url"] for e in tools.events
                                 if e["method"] == "Network.requestWillBeSent")
                return PageReport(text=text, errors=_errors(tools.events), requests=requests, title=title)
            finally:
                tools.ws.close()
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
