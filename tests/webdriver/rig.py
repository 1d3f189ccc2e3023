"""What both browser harnesses (tests/webdriver/e2e.py for the desktop app, tests/web/e2e.py for
`phoneagent web`) need besides the WebDriver client: free ports, the virtual phone's ground truth
over its sim-only ADB host services (tests only; never the agent's path), and the scripted model
server (a real process speaking OpenAI-compatible HTTP, scripted through POST /__script)."""
import json
import os
import socket
import subprocess
import sys
import urllib.request


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def adb_service(port, service, read_body):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"%04x%s" % (len(service.encode()), service.encode()))
    status = s.recv(4)
    if status != b"OKAY":
        rest = s.recv(4096)
        raise RuntimeError(f"{service}: {status!r} {rest!r}")
    body = b""
    if read_body:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            body += chunk
    s.close()
    return body


def truth(port):
    """The virtual phone's ground truth (orders, payments, mails, screen, touches)."""
    txt = adb_service(port, "host:sim-state", True).decode()
    # Some servers prefix the body with a hex4 length.
    if not txt.lstrip().startswith("{"):
        txt = txt[4:]
    return json.loads(txt)


def reset(port, scenario):
    adb_service(port, f"host:sim-reset:virtual-phone-1:{scenario}", False)


# Scripts both harnesses run (the same scenario in the app and in the browser).
ASK_COLOUR_SCRIPT = [
    {"content": 'do(action="Interact", message="Which colour do you want?")'},
    {"content": 'finish(message="Noted the colour")'},
    {"content": 'finish(message="Noted the colour", confirm=True)'},
]
ASK_SIZE_SCRIPT = [
    {"content": 'do(action="Interact", message="Which size do you want?")'},
    {"content": 'finish(message="No size given")'},
    {"content": 'finish(message="No size given", confirm=True)'},
]
TAKE_OVER_SHOP_SCRIPT = [
    {"content": 'do(action="Take_over", message="Please open the shop for me")'},
    {"content": 'finish(message="The shop is open")'},
    {"content": 'finish(message="The shop is open", confirm=True)'},
]
# What the model must have been sent after the answer / the skip.
ANSWER_TEXT = "dark blue, please"
SKIPPED_MARK = "skipped this question"


def model_was_sent(model, text):
    """True when any request the scripted model got contains `text` (JSON, unescaped)."""
    return text in json.dumps(model.requests(), ensure_ascii=False)


class Model:
    """The scripted model server, started with an empty script; each test replaces it."""

    def __init__(self, binary, home_dir, sim_port, procs, log, extra=(), env=None):
        empty = os.path.join(home_dir, "empty-script.jsonl")
        open(empty, "w").close()
        self.p = subprocess.Popen([binary, "--port", "0", "--sim-port", str(sim_port), "--script", empty, *extra],
                                  stdout=subprocess.PIPE, stderr=sys.stderr, text=True,
                                  env=dict(os.environ, **(env or {})))
        procs.append(self.p)
        line = self.p.stdout.readline()
        if "listening on" not in line:
            raise RuntimeError(f"scripted-model did not start: {line!r}")
        self.base_url = line.strip().split("listening on ")[1].split()[0]
        self.root = self.base_url.rsplit("/v1", 1)[0]
        log("scripted model at", self.base_url)

    def script(self, entries, rules=()):
        body = json.dumps({"mode": "replace", "entries": entries, "rules": list(rules),
                           "on_exhausted": "repeat_last"}).encode()
        req = urllib.request.Request(self.root + "/__script", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=10).read()
        urllib.request.urlopen(urllib.request.Request(self.root + "/__requests", method="DELETE"), timeout=10).read()

    def requests(self):
        return json.loads(urllib.request.urlopen(self.root + "/__requests", timeout=10).read())
