"""Measures the Powertools peer (`peer_handler.py`) for `cargo xtask bench-cloud`.

Modes (argv[1]); each writes one JSON object to the file named by argv[2]:

- `counts`: AWS_ENDPOINT_URL is the wire proxy (`tools/wire-proxy`, control at PROXY_URL):
  DynamoDB/S3/SQS calls per submit (fresh key) and per replay (same key, same body).
- `timing`: straight to ministack: latency p50/p95 of fresh-key submits; the 64-same-key storm;
  200 different-key submits against a balance for 37; a failure after the commit (the SQS send
  refused once) followed by the client's retry with the same key.
- `coldstart`: on the local cloud's ministack, the peer and our API function deployed afresh
  (one new function per run) and invoked twice: create → first answer, the first invoke
  alone, and the second (warm) invoke.
- `report ours.json counts.json timing.json cold.json`: prints the markdown rows with the ratios.

The handler is invoked in-process (a plain function call with an API Gateway v2 event), as the
Rust bench drives our router in-process.
"""

import concurrent.futures as cf
import io
import json
import os
import sys
import time
import urllib.request
import uuid
import zipfile
from pathlib import Path

PRICE = 4
PREFIX = os.environ.get("PEER_PREFIX", "peer")
NAMES = {
    "PEER_ACCOUNTS": f"{PREFIX}-accounts",
    "PEER_JOBS": f"{PREFIX}-jobs",
    "PEER_LEDGER": f"{PREFIX}-ledger",
    "PEER_IDEMPOTENCY": f"{PREFIX}-idempotency",
    "PEER_BUCKET": f"{PREFIX}-assets",
    "PEER_PRICE": str(PRICE),
}
KEYS = {
    "PEER_ACCOUNTS": [("user_id", "HASH")],
    "PEER_JOBS": [("job_id", "HASH")],
    "PEER_LEDGER": [("user_id", "HASH"), ("ref", "RANGE")],
    "PEER_IDEMPOTENCY": [("id", "HASH")],
}


class Context:
    """The part of the Lambda context Powertools reads (the in-progress expiry)."""

    function_name = "peer-submit"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:000000000000:function:peer-submit"
    aws_request_id = "bench"

    def get_remaining_time_in_millis(self):
        return 29_000


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def direct(name):
    import boto3

    return boto3.client(name, endpoint_url=os.environ["PEER_DIRECT_ENDPOINT"])


def provision():
    """The peer's tables, bucket and queue on ministack (idempotent); sets the handler's env."""
    ddb, s3, sqs = direct("dynamodb"), direct("s3"), direct("sqs")
    existing = set(ddb.list_tables()["TableNames"])
    for var, keys in KEYS.items():
        if NAMES[var] in existing:
            continue
        ddb.create_table(
            TableName=NAMES[var],
            KeySchema=[{"AttributeName": a, "KeyType": t} for a, t in keys],
            AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a, _ in keys],
            BillingMode="PAY_PER_REQUEST",
        )
    try:
        s3.create_bucket(Bucket=NAMES["PEER_BUCKET"])
    except s3.exceptions.BucketAlreadyOwnedByYou:
        pass
    os.environ.update(NAMES)
    os.environ["PEER_QUEUE_URL"] = sqs.create_queue(QueueName=f"{PREFIX}-jobs")["QueueUrl"]


def new_user(balance):
    """A user with `balance` credits and an uploaded photo; returns (user, body)."""
    user, asset = f"u-{uuid.uuid4().hex[:12]}", uuid.uuid4().hex
    direct("dynamodb").put_item(
        TableName=NAMES["PEER_ACCOUNTS"],
        Item={"user_id": {"S": user}, "credits": {"N": str(balance)}, "in_flight": {"N": "0"}},
    )
    direct("s3").put_object(Bucket=NAMES["PEER_BUCKET"], Key=f"uploads/{user}/original/{asset}", Body=b"png")
    return user, json.dumps({"style": "embroidery", "target": "pet", "original_asset_id": asset})


def event(user, key, body):
    return {
        "version": "2.0",
        "routeKey": "POST /v1/edits",
        "rawPath": "/v1/edits",
        "headers": {"idempotency-key": key, "content-type": "application/json"},
        "requestContext": {"authorizer": {"jwt": {"claims": {"sub": user}}}, "http": {"method": "POST"}},
        "body": body,
        "isBase64Encoded": False,
    }


def invoke(handler, user, key, body):
    """The handler's status code, or the exception's class name (API Gateway: a 502)."""
    try:
        return handler(event(user, key, body), Context())["statusCode"]
    except Exception as e:  # noqa: BLE001 — the outcome is what is measured
        return type(e).__name__


def account(user):
    item = direct("dynamodb").get_item(
        TableName=NAMES["PEER_ACCOUNTS"], Key={"user_id": {"S": user}}, ConsistentRead=True
    )["Item"]
    rows = direct("dynamodb").query(
        TableName=NAMES["PEER_LEDGER"],
        KeyConditionExpression="user_id = :u",
        ExpressionAttributeValues={":u": {"S": user}},
        ConsistentRead=True,
    )["Items"]
    return int(item["credits"]["N"]), len(rows)


def tally(outcomes):
    out = {}
    for o in outcomes:
        out[str(o)] = out.get(str(o), 0) + 1
    return out


def proxy(method, path):
    req = urllib.request.Request(os.environ["PROXY_URL"] + path, method=method)
    with urllib.request.urlopen(req) as r:
        text = r.read()
    return json.loads(text) if text else None


def counts(n):
    from peer_handler import handler

    users = [new_user(100) for _ in range(n)]
    proxy("POST", "/_proxy/reset")
    for user, body in users:
        status = invoke(handler, user, f"k-{user}", body)
        assert status == 202, status
    per_submit = proxy("GET", "/_proxy/counts")
    proxy("POST", "/_proxy/reset")
    for user, body in users:
        status = invoke(handler, user, f"k-{user}", body)
        assert status == 202, status
    per_replay = proxy("GET", "/_proxy/counts")
    return {"n": n, "submit": per_submit, "replay": per_replay}


def storm(handler):
    user, body = new_user(100)
    with cf.ThreadPoolExecutor(max_workers=64) as pool:
        outcomes = list(pool.map(lambda _: invoke(handler, user, "one-key", body), range(64)))
    balance, rows = account(user)
    return {"outcomes": tally(outcomes), "charges": rows, "balance": balance, "start": 100}


def race(handler):
    user, body = new_user(37 * PRICE)
    with cf.ThreadPoolExecutor(max_workers=200) as pool:
        outcomes = list(pool.map(lambda i: invoke(handler, user, f"k-{i}", body), range(200)))
    balance, rows = account(user)
    return {"outcomes": tally(outcomes), "ledger_rows": rows, "balance": balance, "start": 37 * PRICE}


def failure_after_commit(handler):
    """The SQS send fails once after the transaction committed; the client retries."""
    import peer_handler

    user, body = new_user(100)
    real = peer_handler.sqs.send_message
    calls = {"n": 0}

    def once_refused(**kw):
        calls["n"] += 1
        if calls["n"] == 1:
            raise ConnectionError("SQS unreachable (injected once)")
        return real(**kw)

    peer_handler.sqs.send_message = once_refused
    try:
        first = invoke(handler, user, "retry-key", body)
        retry = invoke(handler, user, "retry-key", body)
    finally:
        peer_handler.sqs.send_message = real
    balance, rows = account(user)
    return {"first": first, "retry": retry, "charges": rows, "balance": balance, "start": 100}


def timing(samples):
    from peer_handler import handler

    users = [new_user(100) for _ in range(samples + 3)]
    lat = []
    for i, (user, body) in enumerate(users):
        t = time.perf_counter()
        status = invoke(handler, user, "k", body)
        assert status == 202, status
        if i >= 3:  # the first few pay the clients' connection setup
            lat.append((time.perf_counter() - t) * 1000)
    return {
        "samples": samples,
        "p50": pct(lat, 50),
        "p95": pct(lat, 95),
        "storm": storm(handler),
        "race": race(handler),
        "failure_after_commit": failure_after_commit(handler),
    }


def package_peer(site_packages):
    """The peer's zip: the handler and Powertools with boto3 (a real deploy takes boto3 from
    the runtime and Powertools from its layer; ministack runs the host's python3 with none)."""
    buf = io.BytesIO()
    here = Path(__file__).parent
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(here / "peer_handler.py", "peer_handler.py")
        for p in Path(site_packages).rglob("*"):
            rel = p.relative_to(site_packages)
            top = rel.parts[0]
            if p.is_dir() or "__pycache__" in rel.parts or top.startswith(("pip", "setuptools", "_distutils")):
                continue
            z.write(p, str(rel))
    return buf.getvalue()


def coldstart(runs, api_zip, site_packages):
    lam = direct("lambda")
    api_function = next(
        f["FunctionName"]
        for f in lam.list_functions()["Functions"]
        if "api" in f["FunctionName"].lower() and f.get("Runtime") == "provided.al2023"
    )
    api_env = lam.get_function_configuration(FunctionName=api_function)["Environment"]["Variables"]
    peer_env = dict(NAMES, PEER_QUEUE_URL=os.environ["PEER_QUEUE_URL"])
    peer_zip, ours_zip = package_peer(site_packages), Path(api_zip).read_bytes()
    user, body = new_user(1000)
    out = {"peer": [], "ours": [], "peer_zip": len(peer_zip), "ours_zip": len(ours_zip)}
    for i in range(runs):
        for who, code, runtime, handler, env, ev in [
            ("peer", peer_zip, "python3.12", "peer_handler.handler", peer_env, event(user, f"cold-{i}", body)),
            ("ours", ours_zip, "provided.al2023", "bootstrap", api_env, {**event(user, "x", ""), "rawPath": "/healthz", "routeKey": "GET /healthz", "requestContext": {"http": {"method": "GET", "path": "/healthz"}}}),
        ]:
            name = f"cold-{who}-{uuid.uuid4().hex[:8]}"
            created = time.perf_counter()
            lam.create_function(
                FunctionName=name, Runtime=runtime, Handler=handler, Code={"ZipFile": code},
                Role="arn:aws:iam::000000000000:role/bench", Timeout=29, MemorySize=512,
                Environment={"Variables": env},
            )
            times = []
            for j in range(2):
                if who == "peer":
                    ev = event(user, f"cold-{i}-{j}", body)
                t = time.perf_counter()
                r = lam.invoke(FunctionName=name, Payload=json.dumps(ev).encode())
                payload = r["Payload"].read()
                times.append((time.perf_counter() - t) * 1000)
                assert "FunctionError" not in r, (who, payload[:300])
                if j == 0:
                    # ministack may start the environment at create (as SnapStart does):
                    # create → first answer holds every way of paying the cold start.
                    times.insert(0, (time.perf_counter() - created) * 1000)
            out[who].append(times)
            lam.delete_function(FunctionName=name)
    return out


LABELS = {"dynamodb": "DynamoDB", "sqs": "SQS", "s3": "S3"}


def fmt_counts(c, n):
    """`DynamoDB 3 (GetItem 0, PutItem 1, …) · SQS 1 (…) · S3 1 (…)`, per call."""
    parts = []
    for svc, label in LABELS.items():
        ops = c.get(svc) or {}
        detail = ", ".join(f"{k} {v / n:g}" for k, v in sorted(ops.items()))
        parts.append(f"{label} {sum(ops.values()) / n:g}" + (f" ({detail})" if detail else ""))
    return " · ".join(parts)


def per_call(c, n, svc="dynamodb"):
    return sum((c.get(svc) or {}).values()) / n


def outcomes(o):
    return ", ".join(f"{v} × {k}" for k, v in sorted(o.items(), key=lambda kv: -kv[1]))


def report(ours, peer_counts, peer, cold):
    rows = []
    row = lambda what, a, b, how: rows.append(f"| {what} | {a} | {b} | {how} |")
    n, m = ours["n"], peer_counts["n"]
    ds, dp = per_call(ours["submit"], n), per_call(peer_counts["submit"], m)
    rs, rp = per_call(ours["replay"], n), per_call(peer_counts["replay"], m)
    row("calls per submit", fmt_counts(ours["submit"], n), fmt_counts(peer_counts["submit"], m),
        f"wire proxy, mean of {n} / {m}; DynamoDB calls peer/ours {dp / ds:.1f}×")
    row("calls per replay (same key, same body)", fmt_counts(ours["replay"], n), fmt_counts(peer_counts["replay"], m),
        f"wire proxy, mean of {n} / {m}; DynamoDB calls peer/ours {rp / rs:.1f}×")
    row("submit latency", f"p50 {ours['p50']:.1f} ms · p95 {ours['p95']:.1f} ms",
        f"p50 {peer['p50']:.1f} ms · p95 {peer['p95']:.1f} ms",
        f"{ours['samples']} / {peer['samples']} fresh-key submits, in-process (ours: the API router, Rust dev build; "
        f"the peer: the handler called from Python), straight to ministack; peer/ours {peer['p50'] / ours['p50']:.2f}× at p50, "
        f"{peer['p95'] / ours['p95']:.2f}× at p95")
    for who in (ours, peer):
        s = who["storm"]
        s["text"] = f"{outcomes(s['outcomes'])}; **{s['charges']} charge**, balance {s['start']} → {s['balance']}"
    row("64 concurrent submits, one key", ours["storm"]["text"], peer["storm"]["text"],
        "64 threads/tasks at once, same user, key and body (ours: 202 then 200 replays)")
    for who in (ours, peer):
        r = who["race"]
        r["text"] = f"{outcomes(r['outcomes'])}; {r['ledger_rows']} debit rows, balance {r['start']} → {r['balance']}"
    row("200 concurrent submits, balance for 37", ours["race"]["text"], peer["race"]["text"],
        "200 different keys at once against 37 × the price (4 credits)")
    for who in (ours, peer):
        f = who["failure_after_commit"]
        f["text"] = f"first {f['first']}, retry {f['retry']}; **{f['charges']} charge(s)**, balance {f['start']} → {f['balance']}"
    row("SQS send fails after the commit, client retries the key", ours["failure_after_commit"]["text"],
        peer["failure_after_commit"]["text"],
        "ours: every SendMessage refused on the wire (500, SDK retries included); the peer: send_message raises once")
    if cold:
        med = lambda runs, i: sorted(r[i] for r in runs)[len(runs) // 2]
        o, p = cold["ours"], cold["peer"]
        row("deployed on the local cloud: create → first answer · first invoke · warm invoke",
            f"**{med(o, 0):.0f} ms** · {med(o, 1):.0f} ms · {med(o, 2):.0f} ms (zip {cold['ours_zip'] / 1e6:.2f} MB)",
            f"**{med(p, 0):.0f} ms** · {med(p, 1):.0f} ms · {med(p, 2):.0f} ms (zip {cold['peer_zip'] / 1e6:.2f} MB, boto3 included)",
            f"a new function per run, median of {len(o)}; CreateFunction then two Invokes on ministack (ours: the "
            f"packaged API zip, GET /healthz; the peer: a submit); create → first answer peer/ours {med(p, 0) / med(o, 0):.1f}×")
    print("| what | ours (Rust) | peer (Python, Powertools idempotency) | how |")
    print("|---|---|---|---|")
    print("\n".join(rows))


def main():
    mode, out = sys.argv[1], sys.argv[2]
    if mode == "report":
        load = lambda p: json.loads(Path(p).read_text()) if Path(p).exists() else None
        report(load(sys.argv[2]), load(sys.argv[3]), load(sys.argv[4]), load(sys.argv[5]))
        return
    sys.path.insert(0, str(Path(__file__).parent))
    provision()
    if mode == "counts":
        result = counts(int(sys.argv[3]))
    elif mode == "timing":
        result = timing(int(sys.argv[3]))
    elif mode == "coldstart":
        result = coldstart(int(sys.argv[3]), sys.argv[4], sys.argv[5])
    else:
        raise SystemExit(f"unknown mode {mode}")
    Path(out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
