"""The pipeline through the deployed functions (`cargo xtask bench-cloud`, item 4 of issue 18).

N users each submit one pet edit through the deployed HTTP API (API Gateway on ministack, the
API function); the deployed consumer takes them through the SQS event source mapping; the
stand-in model answers every call after a fixed latency. Per consumer concurrency (1: the
function's reserved concurrency, as `aws lambda put-function-concurrency` sets it, because the
mapping's MaximumConcurrency cannot go below 2; 2 and 4: the mapping's MaximumConcurrency,
what the `ConsumerMaxConcurrency` parameter deploys) it prints one markdown row per figure.

Times come from the jobs table: created_at (the submit's transaction), started_at (the claim)
and updated_at of a finished job (the delivery). One user per job, because a user may have
only MaxInFlight (3) edits in flight and the signup grant (6 credits) pays for one.

argv: endpoint api_url issuer_url model_url outputs.json sample.png jobs model_ms levels
"""

import concurrent.futures as cf
import datetime as dt
import json
import sys
import time
import uuid

import botocore.session

from httpjson import http

ENDPOINT, API, ISSUER, MODEL, OUTPUTS, SAMPLE = sys.argv[1:7]
JOBS, MODEL_MS = int(sys.argv[7]), int(sys.argv[8])
LEVELS = [int(x) for x in sys.argv[9].split(",")]
SESSION = botocore.session.get_session()


def client(name):
    return SESSION.create_client(name, endpoint_url=ENDPOINT, region_name="us-east-1")


def stack_output(key):
    with open(OUTPUTS) as f:
        outputs = next(iter(json.load(f).values()))
    return outputs[key]


class User:
    """A fresh user with an uploaded photo, ready to submit."""

    def __init__(self, photo):
        self.name = f"pipe-{uuid.uuid4().hex[:12]}"
        _, tok = http("POST", f"{ISSUER}/token", {"user": self.name})
        self.auth = {"authorization": f"Bearer {tok['token']}"}
        status, account = http("GET", f"{API}/v1/account", headers=self.auth)
        assert status == 200 and account["balance"] >= 4, (status, account)
        slot_req = {"kind": "original", "content_type": "image/png", "bytes": len(photo)}
        status, slot = http("POST", f"{API}/v1/uploads", slot_req, self.auth)
        assert status == 201, (status, slot)
        headers = {k: v for k, v in slot["headers"].items() if k != "content-length"}
        status, _ = http("PUT", slot["upload_url"], headers=headers, raw=photo)
        assert status == 200, status
        self.body = {"style": "embroidery", "target": "pet", "original_asset_id": slot["asset_id"]}

    def submit(self):
        headers = dict(self.auth, **{"idempotency-key": uuid.uuid4().hex})
        started = time.time()
        status, job = http("POST", f"{API}/v1/edits", self.body, headers)
        assert status == 202, (status, job)
        return job["id"], started, time.time()


def parse_ts(s):
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def max_overlap(intervals):
    events = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals])
    now = best = 0
    for _, d in events:
        now += d
        best = max(best, now)
    return best


def set_concurrency(lam, fn, esm, level):
    if level == 1:
        lam.put_function_concurrency(FunctionName=fn, ReservedConcurrentExecutions=1)
        lam.update_event_source_mapping(UUID=esm, ScalingConfig={"MaximumConcurrency": 2})
    else:
        lam.delete_function_concurrency(FunctionName=fn)
        lam.update_event_source_mapping(UUID=esm, ScalingConfig={"MaximumConcurrency": level})


def run_level(level, users, ddb, jobs_table, lam, fn, esm):
    set_concurrency(lam, fn, esm, level)
    t0 = time.time()
    with cf.ThreadPoolExecutor(max_workers=len(users)) as pool:
        submitted = list(pool.map(lambda u: u.submit(), users))
    submit_ms = [(b - a) * 1000 for _, a, b in submitted]
    pending = {job for job, _, _ in submitted}
    items = {}
    deadline = time.time() + 120 + 10 * len(users) * MODEL_MS / 1000
    while pending and time.time() < deadline:
        for job in list(pending):
            item = ddb.get_item(TableName=jobs_table, Key={"job_id": {"S": job}}, ConsistentRead=True)["Item"]
            if item["status"]["S"] in ("succeeded", "failed", "canceled"):
                items[job] = item
                pending.discard(job)
        time.sleep(0.05)
    last = time.time()
    assert not pending, f"{len(pending)} jobs not finished in time"
    statuses = sorted({i["status"]["S"] for i in items.values()})
    created = {j: parse_ts(i["created_at"]["S"]) for j, i in items.items()}
    started = {j: parse_ts(i["started_at"]["S"]) for j, i in items.items()}
    done = {j: parse_ts(i["updated_at"]["S"]) for j, i in items.items()}
    wait = [(started[j] - created[j]) * 1000 for j in items]
    work = [(done[j] - started[j]) * 1000 for j in items]
    total = [(done[j] - created[j]) * 1000 for j in items]
    wall = max(done.values()) - min(created.values())
    return {
        "level": level,
        "jobs": len(items),
        "statuses": statuses,
        "jobs_per_min": len(items) / wall * 60,
        "wall_s": wall,
        "observed": max_overlap([(started[j], done[j]) for j in items]),
        "wait": (pct(wait, 50), pct(wait, 95)),
        "wait_min": min(wait),
        "work": (pct(work, 50), pct(work, 95)),
        "total": (pct(total, 50), pct(total, 95)),
        "submit": (pct(submit_ms, 50), pct(submit_ms, 95)),
        "client_s": last - t0,
    }


def main():
    photo = open(SAMPLE, "rb").read()
    lam, ddb = client("lambda"), client("dynamodb")
    jobs_table = stack_output("JobsTableName")
    mapping = next(
        m for m in lam.list_event_source_mappings()["EventSourceMappings"] if ":sqs:" in m["EventSourceArn"]
    )
    fn, esm = mapping["FunctionArn"].split(":")[-1], mapping["UUID"]
    rule = [{"call": "any", "fault": "latency_ms", "ms": MODEL_MS}]
    status, _ = http("DELETE", f"{MODEL}/_stand-in/faults")
    status, _ = http("POST", f"{MODEL}/_stand-in/faults", rule)
    assert status in (200, 204), status
    # Warm: one job through every function first, so no level pays the cold starts.
    warm = User(photo)
    run_level(4, [warm], ddb, jobs_table, lam, fn, esm)
    results = []
    for level in LEVELS:
        users = [User(photo) for _ in range(JOBS)]
        r = run_level(level, users, ddb, jobs_table, lam, fn, esm)
        r["model_ms"] = MODEL_MS
        print(f"pipeline: concurrency {level}: {json.dumps(r)}", file=sys.stderr)
        results.append(r)
    # Where the time goes: the same jobs at concurrency 1 with an instant model leave the
    # consumer's own work (image work, store calls, the invoke).
    http("DELETE", f"{MODEL}/_stand-in/faults")
    r = run_level(1, [User(photo) for _ in range(JOBS)], ddb, jobs_table, lam, fn, esm)
    r["model_ms"] = 0
    print(f"pipeline: concurrency 1, instant model: {json.dumps(r)}", file=sys.stderr)
    results.append(r)
    for r in results:
        model_s = 3 * r["model_ms"] / 1000
        how = (
            f"{r['jobs']} jobs submitted at once ({', '.join(r['statuses'])}); the deployed consumer at "
            + ("reserved concurrency 1" if r["level"] == 1 else f"event source MaximumConcurrency {r['level']}")
            + f"; most consumers seen at once (claim → done overlap): {r['observed']}"
        )
        print(
            f"| pipeline, consumer concurrency {r['level']}, model {r['model_ms']} ms a call | **{r['jobs_per_min']:.1f} jobs/min** "
            f"({r['jobs']} in {r['wall_s']:.1f} s) · queue wait p50 {r['wait'][0]:.0f} ms · p95 {r['wait'][1]:.0f} ms (min {r['wait_min']:.0f}) · "
            f"submit → delivered p50 {r['total'][0]/1000:.2f} s · p95 {r['total'][1]/1000:.2f} s · "
            f"claim → delivered p50 {r['work'][0]/1000:.2f} s (model {model_s:.1f} s of it) · "
            f"submit through the API p50 {r['submit'][0]:.0f} ms | {how} |"
        )


if __name__ == "__main__":
    main()
