"""A small W3C WebDriver client (stdlib only) for WebKitWebDriver driving the Tauri app.

ENVIRONMENT.md: WebKitWebDriver used directly with TAURI_WEBVIEW_AUTOMATION=true is reliable;
tauri-driver with a bare HTTP client saw connection resets. Every request has a timeout and
connection errors are retried a few times.
"""
import json
import time
import urllib.error
import urllib.request

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


class WebDriverError(Exception):
    pass


class Session:
    def __init__(self, base, capabilities, timeout=60):
        self.base = base.rstrip("/")
        resp = self._req("POST", "/session", {"capabilities": {"alwaysMatch": capabilities}}, timeout=timeout)
        self.id = resp["sessionId"] if "sessionId" in resp else resp["value"]["sessionId"]

    def _req(self, method, path, body=None, timeout=30):
        data = None if body is None else json.dumps(body).encode()
        last = None
        for attempt in range(4):
            req = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=timeout) as r:
                    out = json.loads(r.read() or b"{}")
                    return out.get("value", out) if path != "/session" else out
            except urllib.error.HTTPError as e:
                payload = e.read().decode(errors="replace")
                raise WebDriverError(f"{method} {path}: HTTP {e.code}: {payload[:500]}") from None
            except TimeoutError:
                raise WebDriverError(f"{method} {path}: no answer within {timeout}s") from None
            except (ConnectionError, urllib.error.URLError) as e:
                last = e
                time.sleep(0.5 * (attempt + 1))
        raise WebDriverError(f"{method} {path}: {last}")

    def cmd(self, method, path, body=None, timeout=30):
        return self._req(method, f"/session/{self.id}{path}", body, timeout)

    def quit(self):
        try:
            self.cmd("DELETE", "", timeout=10)
        except Exception:
            pass

    # --- helpers ---
    def js(self, script, *args):
        return self.cmd("POST", "/execute/sync", {"script": script, "args": list(args)})

    def select(self, css, value, timeout=20):
        """Choose `value` in the <select> matching `css`, waiting for it to be rendered first
        (panels load their data asynchronously), and fire `change` as a user's choice would."""
        el = self.wait_for(css, timeout)
        ok = self.js("const el=arguments[0]; if (![...el.options].some(o => o.value === arguments[1])) return false;"
                     " el.value=arguments[1]; el.dispatchEvent(new Event('change', {bubbles: true})); return true;",
                     {ELEMENT: el}, value)
        if not ok:
            raise WebDriverError(f"{css} has no option {value!r}")

    def find(self, css):
        # WebKitWebDriver answers "stale element reference" when the DOM changes while it builds
        # the node handles (the live mirror updates its image up to 60 times a second): ask again.
        for attempt in range(6):
            try:
                els = self.cmd("POST", "/elements", {"using": "css selector", "value": css})
                return [e[ELEMENT] for e in els]
            except WebDriverError as e:
                if "stale element" not in str(e) or attempt == 5:
                    raise
                time.sleep(0.1)

    def wait_for(self, css, timeout=20, visible=True):
        deadline = time.time() + timeout
        while time.time() < deadline:
            els = self.find(css)
            if els:
                if not visible or self.cmd("GET", f"/element/{els[0]}/displayed"):
                    return els[0]
            time.sleep(0.2)
        raise WebDriverError(f"timed out after {timeout}s waiting for {css}")

    def wait_gone(self, css, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if not self.find(css):
                return
            time.sleep(0.2)
        raise WebDriverError(f"timed out after {timeout}s waiting for {css} to go away")

    def wait_until(self, what, fn, timeout=20, interval=0.25):
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            last = fn()
            if last:
                return last
            time.sleep(interval)
        raise WebDriverError(f"timed out after {timeout}s waiting until {what} (last: {last!r})")

    def click(self, css, timeout=20):
        el = self.wait_for(css, timeout)
        self.cmd("POST", f"/element/{el}/click", {})
        return el

    def type(self, css, text, clear=True):
        el = self.wait_for(css)
        if clear:
            self.cmd("POST", f"/element/{el}/clear", {})
        self.cmd("POST", f"/element/{el}/value", {"text": text})
        return el

    def text(self, css):
        els = self.find(css)
        return self.cmd("GET", f"/element/{els[0]}/text") if els else None

    def attr(self, css, name):
        els = self.find(css)
        return self.cmd("GET", f"/element/{els[0]}/attribute/{name}") if els else None

    def rect(self, css):
        for attempt in range(6):
            el = self.wait_for(css)
            try:
                return self.cmd("GET", f"/element/{el}/rect")
            except WebDriverError as e:
                if "stale element" not in str(e) or attempt == 5:
                    raise
                time.sleep(0.1)

    def click_at(self, x, y):
        """A real pointer click at viewport coordinates (through the webview's input path)."""
        self.cmd("POST", "/actions", {"actions": [{
            "type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
            "actions": [
                {"type": "pointerMove", "duration": 0, "x": int(x), "y": int(y)},
                {"type": "pointerDown", "button": 0},
                {"type": "pause", "duration": 60},
                {"type": "pointerUp", "button": 0},
            ]}]})
        self.cmd("DELETE", "/actions")
