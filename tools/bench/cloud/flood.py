"""One caller's flood beside another person's journey, on the deployed local cloud with IAM
enforced (`cargo xtask bench-cloud --flood RATE [--flood-secs N]`, issue 47 item 3).

First the journey alone (JOURNEYS times: an upload slot and the PUT to S3, a quote, the
submit, long-polls until the edit is final, the JPEG download), then the same journeys while
one token sends RATE requests/s of `GET /v1/account` for SECS seconds and a signed Stripe
`checkout.session.completed` for the person arrives in the middle of it. Printed: each step's
p50/p95 idle and under the flood, every answer the person got (nothing but 2xx, or the run
fails), the flooder's answers by status (its 429s must carry `Retry-After`), the pack granted
once, and `atelier-admin audit` after the queue drained. A benchmark, not a test: no figure is
asserted, only what a user would call broken.

argv: api_url issuer_url sample.png admin_bin stack rate secs
env: the local cloud's AWS_* (AWS_CA_BUNDLE: its CA), FLOOD_STRIPE_WEBHOOK_SECRET
"""

from gevent import monkey

monkey.patch_all()  # before anything opens a socket: the flood's senders are greenlets

import hashlib  # noqa: E402
import hmac  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from collections import Counter  # noqa: E402

import gevent  # noqa: E402
import gevent.pool  # noqa: E402
import requests  # noqa: E402
import requests.adapters  # noqa: E402

API, ISSUER, SAMPLE, ADMIN, STACK = sys.argv[1:6]
RATE, SECS = int(sys.argv[6]), int(sys.argv[7])
SECRET = os.environ["FLOOD_STRIPE_WEBHOOK_SECRET"]
JOURNEYS = 3
FINAL = {"succeeded", "failed", "canceled"}
# requests trusts REQUESTS_CA_BUNDLE, not SSL_CERT_FILE: the local cloud's CA for ministack.
os.environ["REQUESTS_CA_BUNDLE"] = os.environ["AWS_CA_BUNDLE"]
PHOTO = open(SAMPLE, "rb").read()


def admin(*args):
    out = subprocess.run([ADMIN, "--stack", STACK, *args], capture_output=True, text=True)
    return out.returncode, out.stdout + out.stderr


def account(prefix):
    """A fresh signed-in account: its session (bearer token set) and user id."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    token = requests.post(f"{ISSUER}/token", json={"user": name}, timeout=60).json()["token"]
    s = requests.Session()
    s.headers["authorization"] = f"Bearer {token}"
    r = s.get(f"{API}/v1/account", timeout=120)
    assert r.status_code == 200, (r.status_code, r.text)
    return name, s, r.json()["user_id"]


class Journey:
    """One person's edit, each step timed; `answers` every status the API gave them."""

    def __init__(self, s):
        self.s, self.steps, self.answers = s, [], Counter()

    def timed(self, step, call):
        t = time.monotonic()
        r = call()
        self.steps.append((step, (time.monotonic() - t) * 1000))
        self.answers[r.status_code] += 1
        return r

    def run(self):
        slot = self.timed("POST /v1/uploads", lambda: self.s.post(
            f"{API}/v1/uploads", json={"kind": "original", "content_type": "image/png", "bytes": len(PHOTO)}, timeout=120))
        slot = slot.json()
        headers = {k: v for k, v in slot["headers"].items() if k != "content-length"}
        # The presigned PUT goes to S3 without the API's bearer token.
        self.timed("PUT photo (S3)", lambda: requests.put(slot["upload_url"], data=PHOTO, headers=headers, timeout=120))
        body = {"style": "embroidery", "target": "pet", "original_asset_id": slot["asset_id"]}
        self.timed("POST /v1/quotes", lambda: self.s.post(f"{API}/v1/quotes", json=body, timeout=120))
        key = {"idempotency-key": uuid.uuid4().hex}
        job = self.timed("POST /v1/edits", lambda: self.s.post(f"{API}/v1/edits", json=body, headers=key, timeout=120)).json()
        started = time.monotonic()
        while job.get("status") not in FINAL and time.monotonic() - started < 300:
            job = self.timed("GET /v1/edits/{id} (wait=10)", lambda: self.s.get(
                f"{API}/v1/edits/{job['id']}", headers={"prefer": "wait=10"}, timeout=120)).json()
        self.steps.append(("submit → final", (time.monotonic() - started) * 1000))
        url = (job.get("result") or {}).get("url")
        if url:
            self.timed("GET result (S3)", lambda: requests.get(url, timeout=120))
        return job.get("status")


def flood(s, stop_at, answers):
    """RATE requests/s from one token until `stop_at`, each on its own schedule slot."""
    pool = gevent.pool.Pool(64)
    start, n = time.monotonic(), 0

    def one():
        try:
            r = s.get(f"{API}/v1/account", timeout=60)
            retry = r.headers.get("retry-after")
            answers[f"{r.status_code}{'' if r.status_code != 429 else (' with Retry-After' if retry else ' WITHOUT Retry-After')}"] += 1
        except requests.RequestException as e:
            answers[type(e).__name__] += 1

    while time.monotonic() < stop_at:
        due = start + n / RATE
        gevent.sleep(max(0.0, due - time.monotonic()))
        pool.spawn(one)
        n += 1
    pool.join(timeout=60)
    return n


def stripe_paid(user, tag):
    """A `checkout.session.completed` for the starter pack, signed as Stripe signs."""
    body = json.dumps({"id": f"evt_flood_{tag}", "type": "checkout.session.completed",
                       "data": {"object": {"id": f"cs_test_{tag}", "object": "checkout.session", "payment_status": "paid",
                                           "payment_intent": f"pi_{tag}", "client_reference_id": user,
                                           "metadata": {"user_id": user, "pack": "starter", "credits": "50"}}}})
    t = int(time.time())
    mac = hmac.new(SECRET.encode(), f"{t}.{body}".encode(), hashlib.sha256).hexdigest()
    r = requests.post(f"{API}/v1/webhooks/stripe", data=body, timeout=120,
                      headers={"stripe-signature": f"t={t},v1={mac}", "content-type": "application/json"})
    return r.status_code


def journeys(s):
    done = []
    for _ in range(JOURNEYS):
        j = Journey(s)
        status = j.run()
        done.append((j, status))
    return done


def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(p * len(v)))] if v else 0


def table(idle, flooded):
    print("| step | idle p50 / p95 ms | under the flood p50 / p95 ms |")
    print("|---|---|---|")
    names = [n for n, _ in idle[0][0].steps]
    for name in dict.fromkeys(names):
        a = [ms for j, _ in idle for n, ms in j.steps if n == name]
        b = [ms for j, _ in flooded for n, ms in j.steps if n == name]
        print(f"| {name} | {pct(a, .5):.0f} / {pct(a, .95):.0f} | {pct(b, .5):.0f} / {pct(b, .95):.0f} |")


def main():
    status, out = admin("budget", "set-cap", str(10_000 * 1_000_000))
    assert status == 0, out
    person, s, user = account("journey")
    assert admin("grant", "--user", person, "--credits", "40", "--reason", "bench", "--operator", "bench")[0] == 0
    _, flooder, _ = account("flooder")
    # One connection per sender, as one script with many sockets would have.
    flooder.mount("https://", requests.adapters.HTTPAdapter(pool_maxsize=64))
    flooder.mount("http://", requests.adapters.HTTPAdapter(pool_maxsize=64))
    idle = journeys(s)
    answers = Counter()
    stop_at = time.monotonic() + SECS
    sender = gevent.spawn(flood, flooder, stop_at, answers)
    gevent.sleep(SECS / 2)
    tag = uuid.uuid4().hex[:12]
    paid = [stripe_paid(user, tag) for _ in range(2)]  # one event, twice: Stripe delivers at least once
    flooded = journeys(s)
    sent = sender.get()
    after = s.get(f"{API}/v1/account/ledger?limit=100", timeout=120).json()["items"]
    purchases = [r for r in after if r["kind"] == "purchase"]
    debits = [r for r in after if r["kind"] == "debit"]
    gevent.sleep(20)  # the consumer's last deliveries, then the books
    audit = admin("audit")
    table(idle, flooded)
    person_answers = sum((j.answers for j, _ in idle + flooded), Counter())
    print(f"\nthe person's answers: {dict(person_answers)}; edits: {[st for _, st in idle + flooded]}")
    print(f"the flooder: {sent} requests sent in {SECS} s ({RATE}/s asked, at most 64 in flight); answers {dict(answers)}")
    print(f"the Stripe webhook under the flood: {paid}; purchases granted: {len(purchases)}; debits: {len(debits)} for {2 * JOURNEYS} submits")
    print(f"audit: exit {audit[0]}: {audit[1].strip().splitlines()[-1:] if audit[1].strip() else ''}")
    broken = [k for k in person_answers if k >= 400] or len(purchases) != 1 or audit[0] != 0 \
        or any(st != "succeeded" for _, st in idle + flooded)
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()
