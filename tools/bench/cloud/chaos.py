"""The fault harness against the deployed stack (`cargo xtask bench-cloud --chaos N`, issue 33,
item 4b): N paid edits through the deployed HTTP API, consumed by the deployed consumer through
the SQS event source, on the local cloud with IAM enforced, with faults chosen by a seed; then
the money invariants of `tests/tests/chaos.rs` checked over everything that happened.

Faults (per job, drawn from the seed before anything runs):
- clients retrying the submit with the same Idempotency-Key, in turn or 2-3 at once: every
  answer must name the one job the key made;
- the stand-in model's wire faults on one of the job's calls (`POST /_stand-in/faults`, rules
  scoped to the job id, which is derived from (user, operation, key) as the API derives it, so
  a rule is in place before the submit and no consumer can outrun it);
- extra `{"jobId"}` messages sent straight into the jobs queue (redeliveries), now or later;
- wire faults between each deployed function and DynamoDB, SQS, S3 and Secrets Manager: each
  function's own wire proxy (`tools/wire-proxy`, put there by xtask, CHAOS_PROXIES) injects the
  in-process harness's kinds at its rates (CHAOS_WIRE_RATES), seeded from SEED: transaction
  conflicts, throttling, provisioned throughput exceeded, 500s, latency, and replies dropped
  after the emulator answered, among them lost replies after a committed transaction (a
  `TransactWriteItems` the emulator answered 200);
- the consumer's process SIGKILLed while it holds the job: the job's edit call is held by the
  stand-in, and the consumer process whose connection to the stand-in is waiting on that call
  (`ss -tnpi`: sent, nothing received since) is killed. The job stays `processing` and the
  sweeper, invoked through the Lambda API every SWEEP_S, fails and refunds it once it is older
  than ATELIER_STUCK_AFTER_SECS, set on the deployed consumer and sweeper to STUCK_S (the
  least the configuration accepts above the consumer's 300 s timeout, plus a margin).

Each user (fresh, the signup grant plus an operator grant, `atelier-admin grant`) submits up to
3 edits (the in-flight limit), so every refusal is a fault of ours, not the limit. At most
WINDOW jobs wait in `queued` before the next user starts.

Checks once every job is terminal: each job exactly one debit, one refund iff failed or
canceled, none otherwise; per job at most one check, edit and review call on the stand-in; each
key one job; each user's balance = the sum of their ledger = the grants less 4 per unrefunded
job; the day's budget within its cap with nothing left reserved; `atelier-admin audit` clean;
every wire fault kind fired at its floor (WIRE_FLOORS, per 1,000 jobs), and a proxy whose
figures cannot be read is a violation, never a skip.
Prints a markdown summary; exits 1 on any violation.

argv: api_url issuer_url model_url outputs.json sample.png admin_bin stack jobs seed
env: the local cloud's AWS_* (AWS_CA_BUNDLE: its CA), GATEWAY_PORT (ministack's port),
CHAOS_PROXIES (`function=URL,…`: each function's wire proxy), CHAOS_WIRE_RATES (`kind=rate,…`)
"""

import concurrent.futures as cf
import hashlib
import json
import os
import random
import signal
import ssl
import subprocess
import sys
import threading
import time
import uuid

import botocore.session

import httpjson

API, ISSUER, MODEL, OUTPUTS, SAMPLE, ADMIN, STACK = sys.argv[1:8]
JOBS, SEED = int(sys.argv[8]), int(sys.argv[9])
STUCK_S = 330
SWEEP_S = 20
WINDOW = 12
GRANT = 8  # with the signup grant's 6: three 4-credit edits, 2 left
TERMINAL = ("succeeded", "failed", "canceled")
MODEL_FAULTS = [
    ("edit", "error_500"), ("edit", "timeout"), ("edit", "malformed_json"), ("edit", "missing_usage"),
    ("edit", "error_429"), ("check", "malformed_json"), ("check", "not_ready"), ("check", "error_503"),
    ("review", "error_500"), ("review", "schema_violation"),
]
PROXIES = dict(p.split("=", 1) for p in os.environ.get("CHAOS_PROXIES", "").split(",") if p)
WIRE_RATES = os.environ.get("CHAOS_WIRE_RATES", "")  # printed with the figures
# Each kind's least count per 1,000 jobs, and the lost reply after a committed transaction:
# about a third of what a run counts (60 jobs, seed 20261207: 11, 43, 17, 19, 17, 43 and 3); at
# N jobs a floor of floor * N / 1,000, at least 1. Every kind here must fire, whatever the rates
# say: a kind left out of the plan fails the run instead of going unchecked.
WIRE_FLOORS = {
    "transaction_conflict": 60, "throttling": 240, "provisioned_throughput_exceeded": 90,
    "internal_error": 100, "drop_after_forward": 90, "latency": 240,
    "lost reply after a committed transaction": 15,
}
TLS = ssl.create_default_context(cafile=os.environ["AWS_CA_BUNDLE"])
SESSION = botocore.session.get_session()
B32 = "0123456789abcdefghjkmnpqrstvwxyz"
LOCK = threading.Lock()
TALLY = {}


def count(what, n=1):
    with LOCK:
        TALLY[what] = TALLY.get(what, 0) + n


def client(name):
    return SESSION.create_client(name, endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")


def http(method, url, body=None, headers=None, raw=None):
    return httpjson.http(method, url, body, headers, raw, tls=TLS, timeout=120)


def admin(*args):
    out = subprocess.run([ADMIN, "--stack", STACK, *args], capture_output=True, text=True)
    return out.returncode, out.stdout + out.stderr


def job_id(user, key):
    """`JobId::derive` (shared/src/domain/ids.rs): SHA-256 of the length-prefixed parts,
    Crockford base32, 26 characters."""
    h = hashlib.sha256()
    for part in (user, "edit", key):
        h.update(len(part.encode()).to_bytes(8, "big"))
        h.update(part.encode())
    acc, bits, out = 0, 0, []
    for b in h.digest():
        acc, bits = (acc << 8) | b, bits + 8
        while bits >= 5 and len(out) < 26:
            bits -= 5
            out.append(B32[(acc >> bits) & 31])
    return "job_" + "".join(out)


class Plan:
    """One job's faults, drawn from the seed."""

    def __init__(self, rng, index):
        self.index = index
        self.key = uuid.UUID(int=rng.getrandbits(128)).hex
        r = rng.random()
        self.retries = "none" if r < 0.6 else ("in_turn" if r < 0.75 else "at_once")
        self.copies = rng.randint(2, 3)
        self.model = rng.choice(MODEL_FAULTS) if rng.random() < 0.15 else None
        self.crash = self.model is None and rng.random() < 0.05
        self.dups = [rng.uniform(0, 30) for _ in range(rng.randint(1, 3))] if rng.random() < 0.15 else []


class Run:
    """The run's shared state: jobs by id, their users, what the faults did."""

    def __init__(self):
        self.sqs, self.lam, self.ddb = client("sqs"), client("lambda"), client("dynamodb")
        with open(OUTPUTS) as f:
            out = next(iter(json.load(f).values()))
        self.queue, self.jobs_table = out["QueueUrl"], out["JobsTableName"]
        self.photo = open(SAMPLE, "rb").read()
        self.status = {}  # job id -> status
        self.items = {}  # job id -> final item
        self.owner = {}  # job id -> User
        self.plans = {}  # job id -> Plan
        self.crash_targets = {}  # job id -> None (waiting) | what was killed
        self.keys = {}  # key -> set of job ids answered
        self.violations = []
        self.done = threading.Event()
        self.model_port = int(MODEL.rsplit(":", 1)[1].split("/")[0])

    def queued(self):
        with LOCK:
            return sum(1 for s in self.status.values() if s == "queued")

    def violation(self, text):
        print(f"chaos: VIOLATION: {text}", file=sys.stderr)
        with LOCK:
            self.violations.append(text)


class User:
    def __init__(self, run, n):
        self.name = f"chaos-{SEED}-{n}-{uuid.uuid4().hex[:6]}"
        self.refresh()
        # The wire faults reach these too: each step is retried on a 5xx, as the app would.
        status, account = app_call("GET", f"{API}/v1/account", headers=self.auth)
        assert status == 200, (status, account)
        status, out = admin("grant", "--user", self.name, "--credits", str(GRANT), "--reason", "chaos", "--operator", "chaos")
        assert status == 0, out
        slot_req = {"kind": "original", "content_type": "image/png", "bytes": len(run.photo)}
        status, slot = app_call("POST", f"{API}/v1/uploads", slot_req, self.auth)
        assert status == 201, (status, slot)
        headers = {k: v for k, v in slot["headers"].items() if k != "content-length"}
        status, _ = http("PUT", slot["upload_url"], headers=headers, raw=run.photo)
        assert status == 200, status
        self.body = {"style": "embroidery", "target": "pet", "original_asset_id": slot["asset_id"]}
        self.jobs = []

    def refresh(self):
        """A fresh ID token, as the app gets one when its session's token expires (an hour,
        as Cognito's): a run longer than that checks its first users after theirs ran out."""
        _, tok = http("POST", f"{ISSUER}/token", {"user": self.name})
        self.auth = {"authorization": f"Bearer {tok['token']}"}

    @classmethod
    def existing(cls, name, jobs):
        """A user of an earlier run of this seed, for `CHAOS_CHECK_ONLY`."""
        user = cls.__new__(cls)
        user.name, user.jobs = name, jobs
        user.refresh()
        return user


def app_call(method, url, body=None, headers=None):
    """A request the app makes again on a server error or no answer: (status, body)."""
    for _ in range(5):
        try:
            status, answer = http(method, url, body, headers)
        except OSError as e:
            status, answer = 599, str(e)
        if status < 500:
            return status, answer
        count("setup requests retried after a 5xx")
        time.sleep(1)
    return status, answer


def submit_once(user, key):
    """One submit, retried with the same key while the answer is a server error (a person's
    app would): (status, body, whether an answer was lost on the way)."""
    headers = dict(user.auth, **{"idempotency-key": key})
    status, body, lost = None, None, False
    for _ in range(20):
        try:
            status, body = http("POST", f"{API}/v1/edits", user.body, headers)
        except OSError as e:  # no answer at all: the app retries the same key
            status, body = 599, str(e)
        if status < 500:
            return status, body, lost
        count("submit_5xx_retried")
        lost = True
        time.sleep(1)
    return status, body, lost


def submit(run, user, plan):
    jid = job_id(user.name, plan.key)
    arm(run, jid, plan)
    n = 1 if plan.retries == "none" else plan.copies
    if plan.retries == "at_once":
        with cf.ThreadPoolExecutor(max_workers=n) as pool:
            answers = list(pool.map(lambda _: submit_once(user, plan.key), range(n)))
    else:
        answers = [submit_once(user, plan.key) for _ in range(n)]
    ids = {b["id"] for s, b, _ in answers if s in (200, 202)}
    codes = sorted(s for s, _, _ in answers)
    count("submits_sent", n)
    count("submits_created (202)", codes.count(202))
    count("submits_replayed (200)", codes.count(200))
    # The 202 may be the answer a 5xx replaced (the API committed, its answer was lost): then
    # every answer the client saw is a replay of the one job, which is right.
    created = {0, 1} if any(lost for _, _, lost in answers) else {1}
    if ids != {jid} or codes.count(202) not in created or any(s not in (200, 202) for s in codes):
        run.violation(f"key {plan.key} of {user.name}: answers {codes}, job ids {sorted(ids)} (derived {jid})")
    with LOCK:
        run.keys[plan.key] = ids
        run.status[jid] = "queued"
        run.owner[jid] = user
        run.plans[jid] = plan
    user.jobs.append(jid)
    for delay in plan.dups:
        threading.Timer(delay, duplicate, (run, jid)).start()


def arm(run, jid, plan):
    """The job's stand-in rules, before its submit."""
    rules = []
    if plan.model:
        call, fault = plan.model
        rule = {"call": call, "job": jid, "fault": fault, "times": 1}
        if fault == "timeout":
            rule["ms"] = 2500  # then a 504: ambiguous, as a gateway timeout is
        rules.append(rule)
        count(f"model fault armed: {call} {fault}")
    if plan.crash:
        rules.append({"call": "edit", "job": jid, "fault": "latency_ms", "ms": 15000, "times": 1})
        with LOCK:
            run.crash_targets[jid] = None
    if rules:
        status, _ = http("POST", f"{MODEL}/_stand-in/faults", rules)
        assert status in (200, 204), status


def duplicate(run, jid):
    run.sqs.send_message(QueueUrl=run.queue, MessageBody=json.dumps({"jobId": jid}))
    count("duplicate messages sent")


def descendants(root):
    """Pids under `root`, from /proc."""
    children = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(pid))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def environ(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            pairs = f.read().split(b"\0")
    except OSError:
        return {}
    return dict(p.decode(errors="replace").split("=", 1) for p in pairs if b"=" in p)


def ministack_pid():
    port = os.environ["GATEWAY_PORT"]
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")[:2]
        except OSError:
            continue
        if any(b"ministack" in c for c in cmd) and environ(pid).get("GATEWAY_PORT") == port:
            return int(pid)
    raise SystemExit("chaos: no ministack on GATEWAY_PORT")


def consumer_pids(root):
    return {p for p in descendants(root) if "Consumer" in environ(p).get("AWS_LAMBDA_FUNCTION_NAME", "")}


def waiting_sockets(port):
    """Connections to the stand-in: (pid, local address, ms since the last send, ms since the
    last receive) from `ss -tnpi`."""
    text = subprocess.run(
        ["ss", "-tnpiH", "state", "established", "dst", f"127.0.0.1:{port}"], capture_output=True, text=True
    ).stdout
    out, head = [], None
    for line in text.splitlines():
        if not line[:1].isspace():
            head = line
            continue
        if head is None or "pid=" not in head:
            continue
        pid = int(head.split("pid=", 1)[1].split(",", 1)[0])
        info = dict(kv.split(":", 1) for kv in line.split() if ":" in kv and kv.split(":", 1)[0] in ("lastsnd", "lastrcv"))
        snd = int(info.get("lastsnd", 10**9))
        out.append((pid, head.split()[2], snd, int(info.get("lastrcv", 10**9))))
    return out


def crash_watch(run, root):
    """Kills the consumer process holding each crash target, during its held edit call."""
    while not run.done.is_set():
        with LOCK:
            waiting = [j for j, v in run.crash_targets.items() if v is None]
        if not waiting:
            time.sleep(0.3)
            continue
        _, calls = http("GET", f"{MODEL}/_stand-in/calls")
        for jid in waiting:
            if calls["by_job"].get(jid, {}).get("edit", 0) >= 1:
                kill_holder(run, root, jid, time.time())
        time.sleep(0.2)


def kill_holder(run, root, jid, seen):
    """The edit arrived at `seen` and is held 15 s: 1.5 s later, the consumer's connection that
    sent about then and has received nothing since is the one waiting on it."""
    time.sleep(1.5)
    consumers = consumer_pids(root)
    age = (time.time() - seen) * 1000
    candidates = [
        (abs(snd - age), pid)
        for pid, _, snd, rcv in waiting_sockets(run.model_port)
        if pid in consumers and age - 700 <= snd <= age + 700 and rcv > snd
    ]
    if not candidates:
        count("crashes not aimed (no waiting consumer found)")
        with LOCK:
            run.crash_targets[jid] = "missed"
        return
    if len({pid for _, pid in candidates}) > 1:
        count("crashes aimed among several waiting consumers")
    pid = min(candidates)[1]
    os.kill(pid, signal.SIGKILL)
    count("consumer processes SIGKILLed")
    print(f"chaos: SIGKILL consumer pid {pid} holding {jid}", file=sys.stderr)
    with LOCK:
        run.crash_targets[jid] = pid
    # The redelivery AWS makes once the visibility timeout ends, made now, while it is held.
    duplicate(run, jid)


def function_named(lam, part):
    names = [f["FunctionName"] for f in lam.list_functions()["Functions"] if part in f["FunctionName"]]
    assert len(names) == 1, (part, names)
    return names[0]


def set_stuck_after(lam):
    """Leases expire in minutes, not 15: ATELIER_STUCK_AFTER_SECS on the consumer (whose
    configuration refuses one not above its timeout) and the sweeper (which acts on it)."""
    for part in ("Consumer", "Sweeper"):
        name = function_named(lam, part)
        env = lam.get_function_configuration(FunctionName=name).get("Environment", {}).get("Variables", {})
        env["ATELIER_STUCK_AFTER_SECS"] = str(STUCK_S)
        lam.update_function_configuration(FunctionName=name, Environment={"Variables": env})
        for _ in range(100):
            if lam.get_function_configuration(FunctionName=name).get("LastUpdateStatus", "Successful") == "Successful":
                break
            time.sleep(0.2)


def sweep(run, sweeper):
    event = {"version": "0", "id": uuid.uuid4().hex, "detail-type": "Scheduled Event", "source": "aws.events",
             "account": "000000000000", "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
             "region": "us-east-1", "resources": [], "detail": {}}
    out = run.lam.invoke(FunctionName=sweeper, Payload=json.dumps(event).encode())
    answer = out["Payload"].read()
    count("sweeps invoked")
    if out.get("FunctionError"):
        count("sweeps that failed")
        print(f"chaos: the sweeper failed: {answer[:300]!r}", file=sys.stderr)


def poll(run):
    with LOCK:
        pending = [j for j, s in run.status.items() if s not in TERMINAL]
    for jid in pending:
        item = run.ddb.get_item(TableName=run.jobs_table, Key={"job_id": {"S": jid}}, ConsistentRead=True).get("Item")
        status = item["status"]["S"] if item else "missing"
        with LOCK:
            run.status[jid] = status
            if status in TERMINAL:
                run.items[jid] = item


def user_flow(run, n, plans):
    while run.queued() > WINDOW:
        time.sleep(0.5)
    for attempt in range(3):
        try:
            user = User(run, n)
            break
        except (OSError, AssertionError, KeyError, TypeError) as e:
            # Setting up the account is not under test: a fresh one is tried instead.
            print(f"chaos: setting up user {n} failed ({e!r}), attempt {attempt + 1}", file=sys.stderr)
            count("user setups retried")
    else:
        raise SystemExit(f"chaos: user {n} could not be set up")
    for plan in plans:
        submit(run, user, plan)
    return user


def drive(run, plans, sweeper):
    """Submits every plan's job from users of three jobs each, polling and sweeping meanwhile,
    until every job is terminal (or long after the last could still be swept)."""
    groups = [plans[i:i + 3] for i in range(0, len(plans), 3)]
    last_sweep, last_report, users, submitted_at = 0.0, time.time(), [], None
    with cf.ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(user_flow, run, n, g) for n, g in enumerate(groups)]
        while True:
            poll(run)
            if time.time() - last_sweep > SWEEP_S:
                sweep(run, sweeper)
                last_sweep = time.time()
            submitted = all(f.done() for f in futures)
            submitted_at = submitted_at or (time.time() if submitted else None)
            with LOCK:
                left = sum(1 for s in run.status.values() if s not in TERMINAL)
                finished = len(run.status) - left
            if time.time() - last_report > 30:
                print(f"chaos: {finished} finished, {left} in flight, {len(run.status)}/{len(plans)} submitted", file=sys.stderr)
                last_report = time.time()
            if submitted and left == 0:
                break
            if submitted and time.time() - submitted_at > STUCK_S + 600:
                break
            time.sleep(1)
        for f in futures:
            users.append(f.result())
    return users


def check_user(run, user, calls, tally):
    """The user's jobs, ledger and balance against each other and against the stand-in."""
    status, account = read(f"{API}/v1/account", user)
    ledger_status, ledger = read(f"{API}/v1/account/ledger?limit=100", user)
    if status != 200 or ledger_status != 200:
        run.violation(f"{user.name}: the account answered {status} {account!r:.200}, the ledger {ledger_status} {ledger!r:.200}")
        return
    rows = ledger["items"]
    if ledger.get("next_cursor"):
        run.violation(f"{user.name}: more than 100 ledger rows")
    refunded = 0
    for jid in user.jobs:
        item = run.items.get(jid)
        state = item["status"]["S"] if item else run.status.get(jid)
        code = item.get("failure", {}).get("M", {}).get("code", {}).get("S") if item else None
        tally["states"][state] = tally["states"].get(state, 0) + 1
        if code:
            tally["codes"][code] = tally["codes"].get(code, 0) + 1
        if state not in TERMINAL:
            run.violation(f"{jid}: still {state}")
        debits = [r["amount"] for r in rows if r["kind"] == "debit" and r.get("job_id") == jid]
        refunds = [r["amount"] for r in rows if r["kind"] == "refund" and r.get("job_id") == jid]
        want = [4] if state in ("failed", "canceled") else []
        refunded += len(refunds)
        if debits != [-4] or refunds != want:
            run.violation(f"{jid} ({state}): debits {debits}, refunds {refunds}")
        c = calls["by_job"].get(jid, {})
        for kind in ("check", "edit", "review"):
            tally["calls"][kind] += c.get(kind, 0)
            if c.get(kind, 0) > 1:
                run.violation(f"{jid}: {c[kind]} {kind} calls for one charge")
        if state == "succeeded" and run.plans[jid].model and run.plans[jid].model[0] == "review":
            review_check(run, user, jid, tally)
        if run.crash_targets.get(jid) not in (None, "missed"):
            hit = state == "failed" and code == "TIMED_OUT"
            tally["crash"]["hit its job (TIMED_OUT, refunded)" if hit else "its job ended otherwise"] += 1
    total = sum(r["amount"] for r in rows)
    expected = 6 + GRANT - 4 * len(user.jobs) + 4 * refunded
    if account["balance"] != total or total != expected or account["in_flight"] != 0:
        run.violation(f"{user.name}: balance {account.get('balance')}, ledger sum {total}, expected {expected}, in flight {account.get('in_flight')}")


def read(url, user):
    """A user's GET, retried on a server error or no answer as the app would (a function that
    hangs into its timeout answers 503 through API Gateway): (status, JSON)."""
    for _ in range(5):
        try:
            status, body = http("GET", url, headers=user.auth)
        except OSError as e:
            status, body = 599, str(e)
        if status == 401:
            count("tokens refreshed (expired)")
            user.refresh()
            continue
        if status < 500 and isinstance(body, dict):
            return status, body
        count("reads retried after a 5xx")
        time.sleep(2)
    return status, body


def review_check(run, user, jid, tally):
    """Rule 7: a result whose review failed is delivered `not_verified`, never `passed`."""
    _, edit = read(f"{API}/v1/edits/{jid}", user)
    edit = edit if isinstance(edit, dict) else {}
    verdict = ((edit.get("result") or {}).get("review") or {}).get("verdict")
    tally["reviews faulted, delivered"][verdict] = tally["reviews faulted, delivered"].get(verdict, 0) + 1
    if verdict != "not_verified":
        run.violation(f"{jid}: its review failed but it was delivered {verdict}")


def check_all(run, users):
    _, calls = http("GET", f"{MODEL}/_stand-in/calls")
    tally = {"states": {}, "codes": {}, "calls": {"check": 0, "edit": 0, "review": 0},
             "reviews faulted, delivered": {},
             "crash": {"hit its job (TIMED_OUT, refunded)": 0, "its job ended otherwise": 0}}
    for user in users:
        check_user(run, user, calls, tally)
    status, out = admin("budget", "show")
    budget = json.loads(out[: out.rindex("}") + 1]) if status == 0 else {}
    if status != 0 or budget["used_micros"] + budget["reserved_micros"] > budget["cap_micros"] or budget["reserved_micros"]:
        run.violation(f"budget: {out.strip()[:400]}")
    audit_status, audit = admin("audit")
    if audit_status != 0:
        run.violation(f"audit: {audit.strip()[-400:]}")
    _, left = http("GET", f"{MODEL}/_stand-in/faults")
    tally["unused rules"] = len([r for r in left if r.get("job")])
    tally["wire"] = wire_check(run)
    tally["budget"] = budget
    tally["audit"] = audit.strip().splitlines()[-1] if audit.strip() else ""
    return tally


def wire_check(run):
    """What each function's proxy injected, against the floors: {function: {kind: n}, "requests":
    {function: n}}. A proxy that cannot be read is a violation (its faults are unknown)."""
    if not PROXIES:
        run.violation("no wire proxies (CHAOS_PROXIES): the wire faults were not injected")
        return {}
    out, fired, requests = {}, {}, {}
    for function, url in PROXIES.items():
        try:
            status, faults = http("GET", f"{url}/_proxy/faults")
            count_status, counts = http("GET", f"{url}/_proxy/counts")
            assert status == 200 and count_status == 200, (status, count_status)
            injected = faults["injected"]
            requests[function] = sum(n for ops in counts.values() for n in ops.values())
        except (OSError, AssertionError, KeyError, TypeError, AttributeError) as e:
            run.violation(f"wire proxy of {function} ({url}) unreadable: {e!r}")
            continue
        kinds = {}
        for f in injected:
            kind = f["kind"]
            if kind == "drop_after_forward" and f["operation"]["name"] == "TransactWriteItems" and f.get("upstream_status") == 200:
                kind = "lost reply after a committed transaction"
                kinds["drop_after_forward"] = kinds.get("drop_after_forward", 0) + 1
            kinds[kind] = kinds.get(kind, 0) + 1
        out[function] = kinds
        for k, n in kinds.items():
            fired[k] = fired.get(k, 0) + n
    for kind, floor in WIRE_FLOORS.items():
        least = max(1, floor * JOBS // 1000)
        if fired.get(kind, 0) < least:
            run.violation(f"FAULT CLASS DID NOT FIRE: wire {kind} fired {fired.get(kind, 0)} times, under its floor of {least} at {JOBS} jobs")
    out["requests"] = requests
    return out


def recheck(run, plans):
    """`CHAOS_CHECK_ONLY=1`: the checks alone, over a run of this seed and job count whose stack
    is still up (its driver stopped): each user found in the accounts table by the seed's name
    prefix and the jobs its three plans' keys derive, every job's final row read again."""
    ddb = run.ddb
    with open(OUTPUTS) as f:
        accounts = next(iter(json.load(f).values()))["AccountsTableName"]
    names, start = [], None
    while True:
        page = ddb.scan(TableName=accounts, **({"ExclusiveStartKey": start} if start else {}))
        for item in page["Items"]:
            uid = item.get("user_id", {}).get("S", "")
            if uid.startswith(f"chaos-{SEED}-"):
                names.append(uid)
        start = page.get("LastEvaluatedKey")
        if not start:
            break
    groups = [plans[i:i + 3] for i in range(0, len(plans), 3)]
    users = []
    for n, group in enumerate(groups):
        for name in (x for x in names if x.split("-")[2] == str(n)):
            jobs = [job_id(name, p.key) for p in group]
            items = [ddb.get_item(TableName=run.jobs_table, Key={"job_id": {"S": j}}, ConsistentRead=True).get("Item") for j in jobs]
            if not any(items):
                continue  # a setup that failed before its submits
            for j, p, item in zip(jobs, group, items):
                run.plans[j], run.status[j] = p, item["status"]["S"] if item else "missing"
                if item:
                    run.items[j] = item
            users.append(User.existing(name, jobs))
    print(f"chaos: check only: {len(users)} users, {len(run.status)} jobs", file=sys.stderr)
    return users


def main():
    started = time.time()
    rng = random.Random(SEED)
    plans = [Plan(rng, i) for i in range(JOBS)]
    run = Run()
    if os.environ.get("CHAOS_CHECK_ONLY"):
        users = recheck(run, plans)
        loads = os.getloadavg()
        tally = check_all(run, users)
        report(run, plans, tally, time.time() - started, loads)
        sys.exit(1 if run.violations else 0)
    set_stuck_after(run.lam)
    sweeper = function_named(run.lam, "Sweeper")
    status, out = admin("budget", "set-cap", str(10_000 * 1_000_000))
    assert status == 0, out
    http("DELETE", f"{MODEL}/_stand-in/faults")
    watcher = threading.Thread(target=crash_watch, args=(run, ministack_pid()), daemon=True)
    watcher.start()
    users = drive(run, plans, sweeper)
    run.done.set()
    loads = os.getloadavg()
    tally = check_all(run, users)
    report(run, plans, tally, time.time() - started, loads)
    sys.exit(1 if run.violations else 0)


def report(run, plans, tally, wall, loads):
    armed = {}
    for p in plans:
        if p.model:
            armed[" ".join(p.model)] = armed.get(" ".join(p.model), 0) + 1
    retries = {k: sum(1 for p in plans if p.retries == k) for k in ("none", "in_turn", "at_once")}
    crashes = sum(1 for p in plans if p.crash)
    print(f"| what | figure |\n|---|---|")
    print(f"| seed · jobs | {SEED} · **{len(run.status)}** of {JOBS} planned, from {len(plans) // 3 + (len(plans) % 3 > 0)} users |")
    print(f"| final states | {json.dumps(tally['states'])} |")
    print(f"| failure codes (each refunded) | {json.dumps(tally['codes'])} |")
    print(f"| submits | {TALLY.get('submits_sent', 0)} sent: {TALLY.get('submits_created (202)', 0)} created, {TALLY.get('submits_replayed (200)', 0)} replays; keys retried in turn {retries['in_turn']}, 2-3 at once {retries['at_once']}; 5xx retried {TALLY.get('submit_5xx_retried', 0)} |")
    print(f"| model faults armed ({sum(armed.values())}; {tally['unused rules']} never reached) | {json.dumps(armed)} |")
    print(f"| duplicate `{{jobId}}` messages | {TALLY.get('duplicate messages sent', 0)} for {sum(1 for p in plans if p.dups)} jobs |")
    print(f"| consumer crashes (SIGKILL mid-edit) | {crashes} planned, {TALLY.get('consumer processes SIGKILLed', 0)} killed ({TALLY.get('crashes aimed among several waiting consumers', 0)} among several waiting), {TALLY.get('crashes not aimed (no waiting consumer found)', 0)} not found; {json.dumps(tally['crash'])} |")
    wire = tally.get("wire", {})
    per = "; ".join(f"{fn} {json.dumps(k)}" for fn, k in wire.items() if fn != "requests")
    print(f"| wire faults (by function; rates {WIRE_RATES}) | {per} over {json.dumps(wire.get('requests', {}))} requests |")
    print(f"| reads retried after a 5xx (checks) · tokens refreshed · setup requests retried · user setups retried | {TALLY.get('reads retried after a 5xx', 0)} · {TALLY.get('tokens refreshed (expired)', 0)} · {TALLY.get('setup requests retried after a 5xx', 0)} · {TALLY.get('user setups retried', 0)} |")
    print(f"| sweeps through the Lambda API | {TALLY.get('sweeps invoked', 0)} ({TALLY.get('sweeps that failed', 0)} failed) |")
    print(f"| stand-in calls | {json.dumps(tally['calls'])} |")
    print(f"| results whose review failed | {json.dumps(tally['reviews faulted, delivered'])} |")
    b = tally["budget"]
    print(f"| budget | used {b.get('used_micros')} µ$, reserved {b.get('reserved_micros')} µ$ of a {b.get('cap_micros')} µ$ cap |")
    print(f"| audit | {tally['audit']} |")
    print(f"| **violations** | **{len(run.violations)}** |")
    print(f"| wall time · load average (1, 5, 15 min) at the end | {wall:.0f} s · {loads[0]:.1f}, {loads[1]:.1f}, {loads[2]:.1f} |")
    for v in run.violations[:50]:
        print(f"\nviolation: {v}", end="")
    print()


if __name__ == "__main__":
    main()
