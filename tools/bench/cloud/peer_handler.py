"""The peer: Atelier's paid submit written with Powertools for AWS Lambda's idempotency utility.

The same submit as `POST /v1/edits` (shared/src/services/submit.rs): refuse a missing asset
(S3 HeadObject) before charging, then debit the account, create the job and write the ledger
row in ONE TransactWriteItems (the same three items), then enqueue the job id (SQS). What makes
a retry safe is Powertools' `@idempotent`, keyed on the user and the `Idempotency-Key` header,
with payload validation on the body and its own DynamoDB persistence table, configured the way
its documentation recommends. The bench (`peer_bench.py`) invokes it in-process and, on the
local cloud, as a deployed Python function.

Environment: PEER_ACCOUNTS, PEER_JOBS, PEER_LEDGER, PEER_IDEMPOTENCY (tables), PEER_BUCKET,
PEER_QUEUE_URL, PEER_PRICE (credits per edit).
"""

import datetime as dt
import json
import os
import uuid

import boto3
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent,
)
from botocore.exceptions import ClientError

ACCOUNTS = os.environ["PEER_ACCOUNTS"]
JOBS = os.environ["PEER_JOBS"]
LEDGER = os.environ["PEER_LEDGER"]
BUCKET = os.environ["PEER_BUCKET"]
QUEUE_URL = os.environ["PEER_QUEUE_URL"]
PRICE = int(os.environ.get("PEER_PRICE", "4"))

ddb = boto3.client("dynamodb")
s3 = boto3.client("s3")
sqs = boto3.client("sqs")
persistence = DynamoDBPersistenceLayer(table_name=os.environ["PEER_IDEMPOTENCY"])
# Scoped by user as ours is (two users may pick the same key); a replay with another body is
# refused (IdempotencyValidationError) rather than answered with the first job.
config = IdempotencyConfig(
    event_key_jmespath='[requestContext.authorizer.jwt.claims.sub, headers."idempotency-key"]',
    payload_validation_jmespath="body",
    raise_on_no_idempotency_key=True,
    expires_after_seconds=24 * 3600,
)


def reply(status, body):
    return {"statusCode": status, "headers": {"content-type": "application/json"}, "body": json.dumps(body)}


@idempotent(config=config, persistence_store=persistence)
def handler(event, context):
    user = event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"]
    body = json.loads(event["body"])
    asset = body["original_asset_id"]
    try:
        s3.head_object(Bucket=BUCKET, Key=f"uploads/{user}/original/{asset}")
    except ClientError as e:
        if e.response["Error"]["Code"] in ("404", "NoSuchKey", "NotFound"):
            return reply(422, {"code": "asset_missing"})
        raise
    job_id = uuid.uuid4().hex
    now = dt.datetime.now(dt.timezone.utc).isoformat()
    price = {"N": str(PRICE)}
    try:
        ddb.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": ACCOUNTS,
                        "Key": {"user_id": {"S": user}},
                        "UpdateExpression": "SET credits = credits - :p, in_flight = in_flight + :one",
                        "ConditionExpression": "credits >= :p",
                        "ExpressionAttributeValues": {":p": price, ":one": {"N": "1"}},
                    }
                },
                {
                    "Put": {
                        "TableName": JOBS,
                        "Item": {
                            "job_id": {"S": job_id},
                            "user_id": {"S": user},
                            "status": {"S": "queued"},
                            "credits": price,
                            "request": {"S": event["body"]},
                            "created_at": {"S": now},
                        },
                        "ConditionExpression": "attribute_not_exists(job_id)",
                    }
                },
                {
                    "Put": {
                        "TableName": LEDGER,
                        "Item": {
                            "user_id": {"S": user},
                            "ref": {"S": f"debit#{job_id}"},
                            "amount": {"N": str(-PRICE)},
                            "job_id": {"S": job_id},
                            "created_at": {"S": now},
                        },
                        "ConditionExpression": "attribute_not_exists(#r)",
                        "ExpressionAttributeNames": {"#r": "ref"},
                    }
                },
            ]
        )
    except ClientError as e:
        if e.response["Error"]["Code"] == "TransactionCanceledException":
            return reply(402, {"code": "insufficient_credits"})
        raise
    sqs.send_message(QueueUrl=QUEUE_URL, MessageBody=json.dumps({"jobId": job_id}))
    return reply(202, {"id": job_id, "credits": PRICE})
