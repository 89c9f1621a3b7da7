"""The API under load on the deployed local cloud (`cargo xtask bench-cloud --load …`, issue 33,
item 3), with locust (pinned in `load-requirements.txt`) as a library, headless.

Per level (concurrent customers, each its own fresh account: the signup grant plus an operator
grant of GRANT credits, `atelier-admin grant`, made before the level and not measured), every
customer runs sessions in a loop, as the web app does: an upload slot and the PUT of the photo
to S3, three quotes (choosing a medium), the submit (4 credits), one long-poll of the edit
(`Prefer: wait=10`), then the ledger; THINK_S between steps. The submit is one API request
in 7 (printed per level); a customer with 3 edits in flight is refused (429) as anyone is. A level runs WARMUP_S (not counted:
new execution environments), then SECS measured; then the queue is left to drain and
`atelier-admin audit` runs on the deployed tables. During the measured window the CPU of
ministack (one Python process), of the function processes it spawned, of this load generator
and of the rest of the machine is sampled from /proc (psutil).

argv: api_url issuer_url outputs.json sample.png admin_bin stack levels secs
env: the local cloud's AWS_* (AWS_CA_BUNDLE: its CA), GATEWAY_PORT (ministack's port)
"""

from gevent import monkey

monkey.patch_all()  # before anything opens a socket: locust's users are greenlets

import json  # noqa: E402
import os
import random
import subprocess
import sys
import time
import uuid

import botocore.session  # noqa: E402
import gevent  # noqa: E402
import gevent.pool  # noqa: E402
import psutil  # noqa: E402
import requests  # noqa: E402
from locust import HttpUser, between, task  # noqa: E402
from locust.env import Environment  # noqa: E402
from locust.event import Events  # noqa: E402

API, ISSUER, OUTPUTS, SAMPLE, ADMIN, STACK = sys.argv[1:7]
LEVELS = [int(x) for x in sys.argv[7].split(",")]
SECS = int(sys.argv[8])
WARMUP_S = 10
THINK_S = (0.5, 1.5)
GRANT = 60
WAIT = 10
# requests trusts REQUESTS_CA_BUNDLE, not SSL_CERT_FILE: the local cloud's CA for ministack.
os.environ["REQUESTS_CA_BUNDLE"] = os.environ["AWS_CA_BUNDLE"]
PHOTO = open(SAMPLE, "rb").read()
ACCOUNTS = []  # (name, token) of the level's customers, taken by on_start


def problem_code(response):
    if not response.status_code:
        return type(response.error).__name__
    try:
        return json.loads(response.text).get("code", "-")
    except (ValueError, AttributeError):
        return "-"


class Customer(HttpUser):
    host = API
    wait_time = between(*THINK_S)

    def on_start(self):
        self.name, token = ACCOUNTS.pop()
        self.auth = {"authorization": f"Bearer {token}"}
        # locust's session pins certifi's roots when verify is True: the local cloud's CA here.
        self.client.verify = os.environ["AWS_CA_BUNDLE"]

    def call(self, method, path, name, expect, **kw):
        """One request, recorded under `name`; anything but `expect` is a failure named by
        its status and problem code (the errors table)."""
        kw.setdefault("headers", self.auth)
        with self.client.request(method, path, name=name, catch_response=True, **kw) as r:
            if r.status_code in expect:
                r.success()
                return r
            r.failure(f"{r.status_code} {problem_code(r)}")
            return None

    def think(self):
        gevent.sleep(random.uniform(*THINK_S))

    @task
    def session(self):
        asset = self.upload()
        if asset is None:
            return
        body = {"style": "embroidery", "target": "pet", "original_asset_id": asset}
        for style in ("origami", "linocut", "embroidery"):
            self.call("POST", "/v1/quotes", "POST /v1/quotes", {200}, json=dict(body, style=style))
            self.think()
        headers = dict(self.auth, **{"idempotency-key": uuid.uuid4().hex})
        r = self.call("POST", "/v1/edits", "POST /v1/edits (submit)", {202}, json=body, headers=headers)
        self.think()
        if r is not None:
            self.follow(r.json()["id"])
        self.call("GET", "/v1/account/ledger", "GET /v1/account/ledger", {200})

    def upload(self):
        slot_req = {"kind": "original", "content_type": "image/png", "bytes": len(PHOTO)}
        r = self.call("POST", "/v1/uploads", "POST /v1/uploads (slot)", {201}, json=slot_req)
        if r is None:
            return None
        slot = r.json()
        headers = {k: v for k, v in slot["headers"].items() if k != "content-length"}
        put = self.call("PUT", slot["upload_url"], "PUT photo (S3, presigned)", {200}, data=PHOTO, headers=headers)
        self.think()
        return slot["asset_id"] if put is not None else None

    def follow(self, job):
        """One long-poll of the new edit, then on (the page says it will notify): a customer
        never waits longer than WAIT, so the load stays the API's, not the queue's."""
        headers = dict(self.auth, prefer=f"wait={WAIT}")
        self.call("GET", f"/v1/edits/{job}", f"GET /v1/edits/{{id}} (wait={WAIT})", {200}, headers=headers)


def make_account(level, i):
    name = f"load{level}-{i}-{uuid.uuid4().hex[:8]}"
    token = requests.post(f"{ISSUER}/token", json={"user": name}, timeout=60).json()["token"]
    r = requests.get(f"{API}/v1/account", headers={"authorization": f"Bearer {token}"}, timeout=120)
    assert r.status_code == 200, (r.status_code, r.text)
    admin("grant", "--user", name, "--credits", str(GRANT), "--reason", "load", "--operator", "load")
    return name, token


def admin(*args):
    out = subprocess.run([ADMIN, "--stack", STACK, *args], capture_output=True, text=True)
    return out.returncode, out.stdout + out.stderr


class Cpu:
    """CPU seconds by group over a window, from /proc (psutil)."""

    GROUPS = ("ministack", "functions", "load generator", "stand-ins", "rest of the machine")

    def __init__(self):
        port = os.environ["GATEWAY_PORT"]
        self.ministack = next(
            p for p in psutil.process_iter(["cmdline"])
            if any("ministack" in c for c in (p.info["cmdline"] or [])[:2]) and env_of(p).get("GATEWAY_PORT") == port
        )
        self.me = os.getpid()

    def group(self, p):
        if p.pid == self.ministack.pid:
            return "ministack"
        if p.pid == self.me:
            return "load generator"
        try:
            if self.ministack.pid in [a.pid for a in p.parents()]:
                return "functions"
            if p.name().startswith(("atelier-model", "atelier-local")):
                return "stand-ins"
        except psutil.Error:
            pass
        return "rest of the machine"

    def snapshot(self):
        seen = {}
        for p in psutil.process_iter():
            try:
                t = p.cpu_times()
                seen[p.pid] = (self.group(p), t.user + t.system, p.name())
            except psutil.Error:
                continue
        t = self.ministack.cpu_times()
        # Function workers ministack reaped during the window count as its children's time.
        seen[-1] = ("functions", t.children_user + t.children_system, "reaped")
        return seen, psutil.cpu_times(), time.time()

    def between(self, a, b):
        (pa, ma, ta), (pb, mb, tb) = a, b
        wall = tb - ta
        cores = dict.fromkeys(self.GROUPS, 0.0)
        for pid, (g, secs, _) in pb.items():
            before = pa.get(pid)
            cores[g] += (secs - (before[1] if before else 0.0)) / wall
        busy = lambda m: m.user + m.nice + m.system + m.irq + m.softirq + m.steal  # noqa: E731
        cores["machine"] = (busy(mb) - busy(ma)) / wall
        # Processes born and gone between two samples (others' compilers) are only in the total.
        known = sum(cores[g] for g in self.GROUPS if g != "rest of the machine")
        cores["rest of the machine"] = max(cores["machine"] - known, 0.0)
        workers = {}
        for pid, (g, _, _) in pb.items():
            if g == "functions" and pid > 0:
                name = function_of(pid)
                workers[name] = workers.get(name, 0) + 1
        return cores, workers


def function_of(pid):
    """A function worker's function (its AWS_LAMBDA_FUNCTION_NAME, shortened)."""
    try:
        name = psutil.Process(pid).environ().get("AWS_LAMBDA_FUNCTION_NAME", "?")
    except psutil.Error:
        return "gone"
    return next((f for f in ("Api", "Consumer", "Sweeper") if f in name), name)


def env_of(p):
    try:
        return p.environ()
    except psutil.Error:
        return {}


class Frozen:
    """A route's figures at the end of the measured window, copied out of locust's stats."""

    def __init__(self, e):
        self.num_requests, self.num_failures = e.num_requests, e.num_failures
        self.p = {p: (e.get_response_time_percentile(p) if e.num_requests else 0) for p in (0.5, 0.95, 0.99)}
        self.response_times = dict(e.response_times)


def frozen(entry):
    return Frozen(entry)


def pct(entry, p):
    return entry.p[p]


def drain(sqs, queue_url, limit_s=90):
    started = time.time()
    while time.time() - started < limit_s:
        a = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])["Attributes"]
        left = int(a["ApproximateNumberOfMessages"]) + int(a["ApproximateNumberOfMessagesNotVisible"])
        if left == 0:
            return time.time() - started, 0
        gevent.sleep(1)
    return time.time() - started, left


def run_level(level, cpu, sqs, queue_url):
    setup = time.time()
    ACCOUNTS[:] = gevent.pool.Pool(4).map(lambda i: make_account(level, i), range(level))
    print(f"load: level {level}: {level} accounts in {time.time() - setup:.0f} s", file=sys.stderr)
    # Events of its own: the global hooks would keep an earlier level's stats counting.
    env = Environment(user_classes=[Customer], events=Events())
    runner = env.create_local_runner()
    runner.start(level, spawn_rate=level)
    gevent.sleep(WARMUP_S)
    env.stats.reset_all()
    before = cpu.snapshot()
    gevent.sleep(SECS)
    after = cpu.snapshot()
    load1 = os.getloadavg()[0]
    stats = env.stats
    rows = {name: frozen(stats.get(name, method)) for (name, method) in list(stats.entries)}
    errors = [(e.method, e.name, e.error, e.occurrences) for e in stats.errors.values()]
    total_rps = stats.total.num_requests / SECS
    runner.quit()
    drained_s, left = drain(sqs, queue_url)
    status, out = admin("audit")
    cores, workers = cpu.between(before, after)
    return {
        "level": level, "rps": total_rps, "rows": rows, "errors": errors,
        "audit": (status, out.strip().splitlines()[-1:] if out.strip() else []),
        "cores": cores, "workers": workers, "load1": load1, "drained_s": drained_s, "left": left,
    }


def report(results):
    print("| clients | req/s, API (all, with S3 PUTs) | submit share | p50 / p95 / p99 ms, all but the long-poll | errors | audit | CPU (cores of 2): ministack · functions · stand-ins · load generator · rest | load avg (1 min) | queue drained after |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        quick = [e for n, e in r["rows"].items() if "wait=" not in n and e.num_requests]
        merged = merge(quick)
        submits = sum(e.num_requests for n, e in r["rows"].items() if "submit" in n)
        api = sum(e.num_requests for n, e in r["rows"].items() if not n.startswith("PUT"))
        errs = sum(n for *_, n in r["errors"])
        c = r["cores"]
        audit = "clean" if r["audit"][0] == 0 else f"NOT clean: {r['audit'][1]}"
        print(
            f"| {r['level']} | **{api / SECS:.1f}** ({r['rps']:.1f}) | {submits}/{api} = {100 * submits / max(api, 1):.0f}% "
            f"| {merged[0]:.0f} / {merged[1]:.0f} / **{merged[2]:.0f}** | {errs} | {audit} "
            f"| {c['ministack']:.2f} · {c['functions']:.2f} · {c['stand-ins']:.2f} · {c['load generator']:.2f} · {c['rest of the machine']:.2f} (machine {c['machine']:.2f}) "
            f"| {r['load1']:.1f} | {r['drained_s']:.0f} s{'' if not r['left'] else ', ' + str(r['left']) + ' left'} |"
        )
    for r in results:
        print(f"\n#### {r['level']} clients\n")
        print("| route | requests | req/s | p50 ms | p95 ms | p99 ms | failures |")
        print("|---|---|---|---|---|---|---|")
        for name, e in sorted(r["rows"].items()):
            print(
                f"| {name} | {e.num_requests} | {e.num_requests / SECS:.1f} | {pct(e, 0.5):.0f} | {pct(e, 0.95):.0f} "
                f"| {pct(e, 0.99):.0f} | {e.num_failures} |"
            )
        for method, name, error, n in sorted(r["errors"], key=lambda e: -e[3]):
            print(f"\nerror: {name}: {error} × {n}", end="")
        print(f"\n\nfunction processes alive at the end: {r['workers']}")


def merge(entries):
    """p50/p95/p99 over several routes' response-time histograms (locust's buckets)."""
    counts = {}
    for e in entries:
        for ms, n in e.response_times.items():
            counts[ms] = counts.get(ms, 0) + n
    total = sum(counts.values())
    out = []
    for p in (0.5, 0.95, 0.99):
        seen = 0
        for ms in sorted(counts):
            seen += counts[ms]
            if seen >= p * total:
                out.append(ms)
                break
        else:
            out.append(0)
    return out


def main():
    session = botocore.session.get_session()
    endpoint = os.environ["AWS_ENDPOINT_URL"]
    sqs = session.create_client("sqs", endpoint_url=endpoint, region_name="us-east-1")
    with open(OUTPUTS) as f:
        queue_url = next(iter(json.load(f).values()))["QueueUrl"]
    # The day's cap must not be what bends: the run books far more edits than a day allows.
    status, out = admin("budget", "set-cap", str(10_000 * 1_000_000))
    assert status == 0, out
    cpu = Cpu()
    results = []
    for level in LEVELS:
        r = run_level(level, cpu, sqs, queue_url)
        print(f"load: level {level}: {r['rps']:.1f} req/s, audit exit {r['audit'][0]}", file=sys.stderr)
        results.append(r)
    report(results)


if __name__ == "__main__":
    main()
