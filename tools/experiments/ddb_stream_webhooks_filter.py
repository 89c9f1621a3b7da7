"""Does ministack apply the webhook fan-out's FilterCriteria, on eventName AND on a key's value
(only INSERTs of rows whose sort key `hook_sk` is "event")?

Run against a ministack you started (docs/local-aws.md, "DynamoDB streams"):
    GATEWAY_PORT=4630 BIND_HOST=127.0.0.1 .venv/bin/ministack &
    python3 tools/experiments/ddb_stream_webhooks_filter.py http://127.0.0.1:4630

A KEYS_ONLY stream on a (hook_pk, hook_sk) table, mapped to a Python function that prints each
batch, filtered as infra/lib/webhooks.ts filters it; then an event row (INSERT), an attempt row
(INSERT, another sort key), a change of the event row (MODIFY). Expected: the first only.
"""

import io
import json
import sys
import time
import zipfile

import boto3

ENDPOINT = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:4630"
KW = dict(endpoint_url=ENDPOINT, region_name="us-east-1",
          aws_access_key_id="test", aws_secret_access_key="test")
ddb, lam, logs = (boto3.client(s, **KW) for s in ("dynamodb", "lambda", "logs"))

HANDLER = "import json\ndef handler(event, context):\n    print('GOT ' + json.dumps([r['eventName'] for r in event['Records']]) + ' ' + json.dumps([r['dynamodb']['Keys'] for r in event['Records']]))\n    return {}\n"
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w") as z:
    z.writestr("index.py", HANDLER)

table = f"webhooks-exp-{int(time.time())}"
ddb.create_table(
    TableName=table, BillingMode="PAY_PER_REQUEST",
    AttributeDefinitions=[{"AttributeName": "hook_pk", "AttributeType": "S"},
                          {"AttributeName": "hook_sk", "AttributeType": "S"}],
    KeySchema=[{"AttributeName": "hook_pk", "KeyType": "HASH"},
               {"AttributeName": "hook_sk", "KeyType": "RANGE"}],
    StreamSpecification={"StreamEnabled": True, "StreamViewType": "KEYS_ONLY"},
)
stream_arn = ddb.describe_table(TableName=table)["Table"]["LatestStreamArn"]
fn = lam.create_function(FunctionName=table, Runtime="python3.12", Handler="index.handler",
                         Role="arn:aws:iam::000000000000:role/x", Code={"ZipFile": buf.getvalue()})
esm = lam.create_event_source_mapping(
    FunctionName=table, EventSourceArn=stream_arn, StartingPosition="LATEST", BatchSize=100,
    BisectBatchOnFunctionError=True,
    FilterCriteria={"Filters": [{"Pattern": json.dumps(
        {"eventName": ["INSERT"], "dynamodb": {"Keys": {"hook_sk": {"S": ["event"]}}}})}]},
)
print("mapping", esm["State"], esm.get("FilterCriteria"))
time.sleep(2)

key = {"hook_pk": {"S": "evt_1"}, "hook_sk": {"S": "event"}}
started = time.time()
ddb.put_item(TableName=table, Item={**key, "body": {"S": "{}"}})
ddb.put_item(TableName=table, Item={"hook_pk": {"S": "evt_1"}, "hook_sk": {"S": "attempt#0001#ep_1"}})
ddb.update_item(TableName=table, Key=key, UpdateExpression="SET due_at = :a",
                ExpressionAttributeValues={":a": {"S": "later"}})

seen, group = [], f"/aws/lambda/{table}"
while time.time() - started < 20:
    time.sleep(1)
    try:
        events = logs.filter_log_events(logGroupName=group).get("events", [])
    except Exception as e:  # the group appears with the first invocation
        events = []
    seen = [e["message"].strip() for e in events if "GOT" in e["message"]]
print(f"after {time.time() - started:.1f}s the function received:")
for line in seen:
    print("  ", line)
print("RESULT:", "delivered" if seen else "nothing delivered")
