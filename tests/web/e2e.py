#!/usr/bin/env python3
"""Browser tests of `phoneagent web` (SPEC C3, issue #13 item 3) in headless Chromium over W3C
WebDriver (chromedriver), against the console's virtual phone (its own process) and the scripted model.

Run by scripts/web-e2e.sh. Environment:
  PHONEAGENT       the phoneagent CLI binary
  SCRIPTED_MODEL   the scripted-model binary
  PHONEAGENT_HOME  fresh data directory (the SQLite file lives here)
  PHONEAGENT_APP_SIM_PORT  the virtual phone's port (ground truth is read there)
  UI_DIR           the built UI (ui/dist)
  CHROMIUM, CHROMEDRIVER   optional paths (default: chromium, chromedriver on PATH)
Ground truth comes from the virtual phone's sim-only services (tests/webdriver/e2e.py's truth()),
never from what the page shows.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import traceback
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "webdriver"))
from wd import Session, WebDriverError  # noqa: E402
import rig  # noqa: E402
from rig import free_port  # noqa: E402

PHONEAGENT = os.environ["PHONEAGENT"]
SCRIPTED_MODEL = os.environ["SCRIPTED_MODEL"]
HOME_DIR = os.environ["PHONEAGENT_HOME"]
SIM_PORT = int(os.environ["PHONEAGENT_APP_SIM_PORT"])
UI_DIR = os.environ.get("UI_DIR", "")
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser") or "chromium"
CHROMEDRIVER = os.environ.get("CHROMEDRIVER") or shutil.which("chromedriver") or "chromedriver"

procs = []


def log(*a):
    print("[web-e2e]", *a, flush=True)


# ---- the virtual phone's ground truth and the scripted model (tests/webdriver/rig.py) ----
def truth():
    return rig.truth(SIM_PORT)


def reset(scenario):
    rig.reset(SIM_PORT, scenario)


class Model(rig.Model):
    def __init__(self):
        super().__init__(SCRIPTED_MODEL, HOME_DIR, SIM_PORT, procs, log)


ORDER_SCRIPT = [
    {"content": 'do(action="Tap", element={{center:提交订单}}, target_description="提交订单")'},
    {"content": 'finish(message="Order submitted")'},
    {"content": 'finish(message="Order submitted", confirm=True)'},
]


# ---- the server ----
class Web:
    def __init__(self):
        args = [PHONEAGENT, "web", "--port", "0"]
        if UI_DIR:
            args += ["--ui-dir", UI_DIR]
        self.p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=sys.stderr, text=True,
                                  env=dict(os.environ, NO_COLOR="1"))
        procs.append(self.p)
        self.out = []
        deadline = time.time() + 60
        self.url = None
        while time.time() < deadline and self.url is None:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError(f"phoneagent web exited: {self.out}")
            self.out.append(line)
            m = re.search(r"(http://127\.0\.0\.1:(\d+)/\?token=([0-9a-f]{64}))", line)
            if m:
                self.url, self.port, self.token = m.group(1), int(m.group(2)), m.group(3)
        if not self.url:
            raise RuntimeError(f"phoneagent web printed no URL: {self.out}")
        self.base = f"http://127.0.0.1:{self.port}"
        log("phoneagent web at", self.base)

    def call(self, cmd, args=None, token=True):
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {self.token}"
        req = urllib.request.Request(f"{self.base}/api/call/{cmd}", data=json.dumps(args or {}).encode(),
                                     method="POST", headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def ws_handshake(self, query):
        """The HTTP status line a WebSocket upgrade of /api/ws{query} gets."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        s.sendall((f"GET /api/ws{query} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nUpgrade: websocket\r\n"
                   "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                   "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        data = s.recv(4096).decode(errors="replace")
        s.close()
        return data.split("\r\n", 1)[0]


def start_task(s, task, mode):
    s.click("#nav-run")
    s.type("#task-input", task)
    s.click(f"#mode-{mode}")
    s.click("#start-run")
    s.wait_for("#stop-run", 20)


def wait_run_end(s, timeout=60):
    s.click("#tab-timeline")
    s.wait_for("#run-finished", timeout)
    s.wait_for("#start-run", 20)
    return s.attr("#run-finished", "data-status")


def main():
    t_start = time.time()
    model = Model()
    web = Web()
    assert web.out[0:1] and sum(web.token in line for line in web.out) == 1, "the token is printed exactly once"

    # Settings through the same API the page uses: the scripted model, no key (key_entry ""),
    # the verifier off (the scripted model answers every role from one script), no desktop
    # notifications (no notification daemon here).
    st, settings = web.call("get_settings")
    assert st == 200, (st, settings)
    p = settings["profiles"][0]
    p.update(base_url=model.base_url, model="scripted", key_entry="", coordinate_space="relative_0_999")
    settings.update(finish_verify="off", notifications=False)
    st, out = web.call("save_settings", {"settings": settings})
    assert st == 200, (st, out)

    wd_port = free_port()
    driver = subprocess.Popen([CHROMEDRIVER, f"--port={wd_port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(driver)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", wd_port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.2)
    s = Session(f"http://127.0.0.1:{wd_port}", {
        "browserName": "chrome",
        "goog:chromeOptions": {"binary": CHROMIUM, "args": [
            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--window-size=1280,800", "--no-first-run", "--no-default-browser-check",
            f"--user-data-dir={os.path.join(HOME_DIR, 'chromium-profile')}"]},
    })
    results = []
    only = [t for t in os.environ.get("E2E_ONLY", "").split(",") if t]

    def test(name, fn):
        if only and not any(o in name for o in only):
            return
        log("---", name)
        t0 = time.time()
        try:
            fn()
            results.append((name, True, ""))
            log(f"PASS {name} ({time.time() - t0:.1f}s)")
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            results.append((name, False, str(e)))
            log("FAIL", name, e)
            try:
                log("page errors:", s.js("return (window.__errors || []).slice(-5)"))
                log("page text:", (s.js("return document.body.innerText") or "")[:1500])
            except Exception:
                pass

    def no_token_is_refused():
        # Every request without the token: the page, a command, a picture, the WebSocket.
        for path in ["/", "/index.html", "/pa/mirror/1"]:
            try:
                urllib.request.urlopen(web.base + path, timeout=10)
                raise AssertionError(f"{path} answered without the token")
            except urllib.error.HTTPError as e:
                assert e.code == 401, (path, e.code)
                assert json.loads(e.read())["code"] == "unauthorized"
        st, body = web.call("list_runs", {"limit": 5}, token=False)
        assert st == 401 and body["code"] == "unauthorized", (st, body)
        assert web.ws_handshake("").startswith("HTTP/1.1 401"), web.ws_handshake("")
        assert web.ws_handshake("?token=" + "0" * 64).startswith("HTTP/1.1 401")
        assert web.ws_handshake("?token=" + web.token).startswith("HTTP/1.1 101")
        # DNS rebinding: another Host name is refused even with the token.
        req = urllib.request.Request(f"{web.base}/?token={web.token}", headers={"Host": f"evil.example:{web.port}"})
        try:
            urllib.request.urlopen(req, timeout=10)
            raise AssertionError("a foreign Host was served")
        except urllib.error.HTTPError as e:
            assert e.code == 403, e.code
        # A bad command is a JSON error, not a crash.
        st, body = web.call("no_such_command")
        assert st == 404 and body["code"] == "unknown_command", (st, body)
        # The browser without the token sees the refusal too.
        s.cmd("POST", "/url", {"url": web.base + "/"})
        text = s.js("return document.body.innerText") or ""
        assert "unauthorized" in text and "token" in text, text[:300]

    def page_loads_with_the_token():
        s.cmd("POST", "/url", {"url": web.url})
        s.wait_for("#nav-run", 30)
        # The token leaves the address bar (kept in sessionStorage for this tab).
        href = s.js("return location.href")
        assert "token=" not in href, href
        assert s.js("return sessionStorage.getItem('phoneagent.web.token')") == web.token
        s.js("window.__errors = []; window.addEventListener('error', e => window.__errors.push(String(e.message)));")
        # A reload still works (the tab's token, the page's cookie).
        s.cmd("POST", "/refresh", {})
        s.wait_for("#nav-run", 30)

    def virtual_phone_and_mirror():
        s.click("#nav-run")
        s.click("#start-virtual-phone", 30)
        s.wait_for("#mirror-img", 30)
        s.wait_until("a mirror frame is shown", lambda: int(s.attr("#mirror-img", "data-seq") or 0) >= 1, 30)
        src = s.attr("#mirror-img", "src") or ""
        assert "/pa/mirror/" in src, src
        # The picture really loaded (through /pa with the token).
        s.wait_until("the mirror image decoded", lambda: s.js("return document.querySelector('#mirror-img').naturalWidth") > 0, 20)
        s.wait_for("#readiness", 30)

    def run_watched_live():
        reset("home")
        steps = [{"content": 'do(action="Tap", element={{center:商城}}, target_description="商城")'},
                 {"content": 'do(action="Wait", duration="2 seconds", reason="let the shop load")'},
                 {"content": 'do(action="Back")'},
                 {"content": 'do(action="Wait", duration="2 seconds", reason="look at the home screen")'},
                 {"content": 'finish(message="Looked at the shop")'},
                 {"content": 'finish(message="Looked at the shop", confirm=True)'}]
        model.script(steps)
        start_task(s, "Open the shop and come back", "off")
        s.click("#tab-timeline")
        # Steps appear while the run is still going (live events over the WebSocket).
        s.wait_for("#timeline-steps [data-step]", 30)
        assert s.find("#stop-run"), "the run had already ended: nothing was watched live"
        status = wait_run_end(s, 90)
        assert status == "succeeded", status
        n = len(s.find("#timeline-steps [data-step]"))
        assert n >= 4, n
        # The timeline's screenshots are pictures served by /pa.
        s.wait_until("timeline thumbnails loaded", lambda: s.js(
            "return [...document.querySelectorAll('#timeline-steps img')].filter(i => i.naturalWidth > 0 && i.src.includes('/pa/')).length") > 0, 20)

    def approve_in_browser():
        reset("checkout")
        model.script(ORDER_SCRIPT)
        start_task(s, "打开结算页并提交订单", "hard")
        s.wait_for("#approval-dialog", 40)
        assert s.attr("#approval-dialog", "data-kind") == "approval"
        assert "提交订单" in (s.text("#approval-dialog") or "")
        request_id = s.attr("#approval-dialog", "data-request-id")
        assert truth()["orders_placed"] == 0, "nothing may run before approval"
        # A page opened while the request waits (here: reloaded) replays the run and shows it.
        s.cmd("POST", "/refresh", {})
        s.wait_for("#approval-dialog", 30)
        assert s.attr("#approval-dialog", "data-request-id") == request_id
        assert s.find("#stop-run"), "the reloaded page does not know the run is going"
        s.click("#approve-btn")
        s.wait_gone("#approval-dialog", 15)
        s.wait_until("an order in the ground truth", lambda: truth()["orders_placed"] == 1, 30)
        status = wait_run_end(s, 60)
        assert status == "succeeded", status
        # The same validation as the app: the answered request cannot be answered again.
        st, body = web.call("answer_request", {"id": request_id, "answer": {"type": "approve"}})
        assert st >= 400 and body["code"] in ("unknown_request", "not_running", "expired_request"), (st, body)
        time.sleep(1)
        assert truth()["orders_placed"] == 1, "exactly one order"

    def reject_in_browser():
        reset("checkout")
        model.script(ORDER_SCRIPT)
        start_task(s, "打开结算页并提交订单", "hard")
        s.wait_for("#approval-dialog", 40)
        s.type("#reject-note", "do not order")
        s.click("#reject-btn")
        s.wait_gone("#approval-dialog", 15)
        wait_run_end(s, 60)
        assert truth()["orders_placed"] == 0, f"a rejected request placed an order: {truth()['orders_placed']}"

    def ask_user_answered():
        reset("home")
        model.script(rig.ASK_COLOUR_SCRIPT)
        start_task(s, "Ask me which colour I want", "wary")
        s.wait_for("#approval-dialog[data-kind='ask_user']", 40)
        assert "Which colour" in (s.text("#approval-dialog") or "")
        s.type("#answer-input", rig.ANSWER_TEXT)
        s.click("#answer-btn")
        s.wait_gone("#approval-dialog", 15)
        wait_run_end(s, 60)
        # The answer went back to the model word for word.
        assert rig.model_was_sent(model, rig.ANSWER_TEXT), "the model never saw the answer"

    def ask_user_skipped():
        # Skip goes through the same validation as in the app and reaches the model as a
        # skipped question (it once failed with mismatched_response).
        reset("home")
        model.script(rig.ASK_SIZE_SCRIPT)
        start_task(s, "Ask me which size I want", "wary")
        s.wait_for("#approval-dialog[data-kind='ask_user']", 40)
        s.click("#skip-btn")
        s.wait_gone("#approval-dialog", 15)
        wait_run_end(s, 60)
        assert not s.find("#app-error"), f"Skip showed an error: {s.attr('#app-error', 'data-code')}"
        assert rig.model_was_sent(model, rig.SKIPPED_MARK), "the model was not told the question was skipped"

    def take_over_in_browser():
        # The model hands the phone to the person; a click on the browser's mirror lands on the
        # phone (ground truth: the shop opens), Hand back resumes the run.
        reset("home")
        model.script(rig.TAKE_OVER_SHOP_SCRIPT)
        start_task(s, "Open the shop", "wary")
        s.wait_for("#takeover-banner", 40)
        gt = truth()
        el = next(e for e in gt["elements"] if e.get("label") == "商城")
        x0, y0, x1, y1 = el["bounds"]
        r = s.rect("#mirror-img")
        s.click_at(r["x"] + (x0 + x1) / 2 / gt["width"] * r["width"],
                   r["y"] + (y0 + y1) / 2 / gt["height"] * r["height"])
        s.wait_until("the phone shows the shop", lambda: truth()["current_screen"].startswith("shop"), 15)
        s.click("#hand-back")
        s.wait_gone("#takeover-banner", 15)
        status = wait_run_end(s, 60)
        assert status == "succeeded", status

    def history_lists_the_runs():
        st, runs = web.call("list_runs", {"limit": 50})
        assert st == 200 and len(runs) >= 4, (st, runs)
        s.click("#nav-history")
        s.wait_for("#runs-list [data-run-id]", 15)
        ids = [s.cmd("GET", f"/element/{e}/attribute/data-run-id") for e in s.find("#runs-list [data-run-id]")]
        assert set(r["id"] for r in runs) <= set(ids), (ids, [r["id"] for r in runs])
        s.click(f"#runs-list [data-run-id='{runs[0]['id']}']")
        s.wait_for("#replay-next", 15)
        s.click("#nav-run")

    test("no_token_is_refused", no_token_is_refused)
    test("page_loads_with_the_token", page_loads_with_the_token)
    test("virtual_phone_and_mirror", virtual_phone_and_mirror)
    test("run_watched_live", run_watched_live)
    test("approve_in_browser_places_one_order", approve_in_browser)
    test("reject_in_browser_places_none", reject_in_browser)
    test("ask_user_answered_in_browser", ask_user_answered)
    test("ask_user_skipped_in_browser", ask_user_skipped)
    test("take_over_in_browser", take_over_in_browser)
    test("history_lists_the_runs", history_lists_the_runs)
    s.quit()

    failed = [r for r in results if not r[1]]
    log(f"{len(results) - len(failed)}/{len(results)} passed in {time.time() - t_start:.0f}s")
    for name, _, err in failed:
        log("FAILED", name, err)
    return 1 if failed or not results else 0


if __name__ == "__main__":
    code = 1
    try:
        code = main()
    except Exception:  # noqa: BLE001
        traceback.print_exc()
    finally:
        for p in procs:
            try:
                p.terminate()
                p.wait(timeout=10)
            except Exception:  # noqa: BLE001
                try:
                    p.kill()
                except Exception:  # noqa: BLE001
                    pass
    sys.exit(code)
