"""What does ministack's AUTH=true enforce? (docs/local-aws.md, "IAM on the local cloud")

Run against a ministack started with AUTH=true, with the venv's python (botocore is
ministack's own dependency):
    AUTH=true GATEWAY_PORT=4640 BIND_HOST=127.0.0.1 .venv/bin/ministack &
    .venv/bin/python tools/experiments/iam_auth.py http://127.0.0.1:4640
and over TLS as the local cloud runs it (USE_SSL=1 with its certificate, the CA in a bundle):
    AUTH=true USE_SSL=1 MINISTACK_SSL_CERT=… MINISTACK_SSL_KEY=… GATEWAY_PORT=4641 … &
    AWS_CA_BUNDLE=bundle.pem .venv/bin/python tools/experiments/iam_auth.py https://127.0.0.1:4641

As the root caller ("test", what the deployer uses) it creates two tables, a bucket, a queue,
a secret, a KMS key, a Python function and a role with a small inline policy, assumes the
role (sts:AssumeRole, as Lambda does for a function) and makes each call with the role's
credentials. Each probe prints one line: what AWS answers, what ministack answered.
"""

import io
import json
import os
import ssl
import sys
import time
import urllib.request
import zipfile

import botocore.session
from botocore.config import Config
from botocore.exceptions import ClientError

ENDPOINT = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:4640"
# Over https (USE_SSL=1, AWS_CA_BUNDLE naming the CA) a TLS-only policy lets the call through.
PLAIN = "refused" if ENDPOINT.startswith("http:") else "allowed"
OVER = "plain HTTP" if ENDPOINT.startswith("http:") else "TLS"
ACCOUNT, REGION = "000000000000", "us-east-1"
SESSION = botocore.session.get_session()
CONFIG = Config(retries={"max_attempts": 1}, s3={"addressing_style": "path"})


def client(service, key="test", secret="test", token=None):
    return SESSION.create_client(service, endpoint_url=ENDPOINT, region_name=REGION, config=CONFIG,
                                 aws_access_key_id=key, aws_secret_access_key=secret,
                                 aws_session_token=token)


def outcome(call):
    try:
        call()
        return "allowed"
    except ClientError as e:
        return f"refused ({e.response['Error']['Code']})"


RESULTS = []


def probe(name, aws, call):
    got = outcome(call)
    ok = got.split(" ")[0] == aws
    RESULTS.append(ok)
    print(f"{'same' if ok else 'DIFFERS'}: {name}: AWS {aws}, ministack {got}")


run = str(int(time.time()))
ddb, s3, sqs, sm, kms, iam, sts, lam = (client(s) for s in
                                        ("dynamodb", "s3", "sqs", "secretsmanager", "kms", "iam", "sts", "lambda"))
tables = {}
for name in ("jobs", "budget"):
    t = f"exp-{name}-{run}"
    ddb.create_table(TableName=t, BillingMode="PAY_PER_REQUEST",
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                     KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}])
    ddb.put_item(TableName=t, Item={"pk": {"S": "a"}, "n": {"N": "1"}})
    tables[name] = (t, f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{t}")
bucket = f"exp-bucket-{run}"
s3.create_bucket(Bucket=bucket)
s3.put_object(Bucket=bucket, Key="uploads/u1/a", Body=b"x")
s3.put_object(Bucket=bucket, Key="private/b", Body=b"x")
queue = sqs.create_queue(QueueName=f"exp-queue-{run}")["QueueUrl"]
queue_arn = f"arn:aws:sqs:{REGION}:{ACCOUNT}:exp-queue-{run}"
other_queue = sqs.create_queue(QueueName=f"exp-other-{run}")["QueueUrl"]
secret = sm.create_secret(Name=f"exp-secret-{run}", SecretString="s3cret")["ARN"]
other_secret = sm.create_secret(Name=f"exp-other-{run}", SecretString="other")["ARN"]
key_id = kms.create_key()["KeyMetadata"]["KeyId"]

# The role: what an Atelier function's role looks like (item actions per table, an S3 prefix
# condition, one queue, one secret), plus one explicit Deny.
jobs_t, jobs_arn = tables["jobs"]
budget_t, budget_arn = tables["budget"]
policy = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Action": ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem",
                                   "dynamodb:ConditionCheckItem"], "Resource": jobs_arn},
    {"Effect": "Allow", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{bucket}/uploads/*"},
    {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": f"arn:aws:s3:::{bucket}",
     "Condition": {"StringLike": {"s3:prefix": ["uploads/*"]}}},
    {"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": queue_arn},
    {"Effect": "Allow", "Action": "secretsmanager:GetSecretValue", "Resource": secret},
    {"Effect": "Allow", "Action": "dynamodb:DeleteItem", "Resource": jobs_arn},
    {"Effect": "Deny", "Action": "dynamodb:DeleteItem", "Resource": jobs_arn},
]}
trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                 "Principal": {"Service": "lambda.amazonaws.com"}}]}
role = f"exp-role-{run}"
role_arn = iam.create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
iam.put_role_policy(RoleName=role, PolicyName="p", PolicyDocument=json.dumps(policy))
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w") as z:
    z.writestr("index.py", "def handler(event, context):\n    return {'ok': True}\n")
fn = f"exp-fn-{run}"
lam.create_function(FunctionName=fn, Runtime="python3.12", Handler="index.handler",
                    Role=role_arn, Code={"ZipFile": buf.getvalue()})
print("-- the deployer (root) and the roles")
probe("root's sts:AssumeRole of a role that trusts only lambda.amazonaws.com", "refused",
      lambda: sts.assume_role(RoleArn=role_arn, RoleSessionName="probe"))
creds = sts.assume_role(RoleArn=role_arn, RoleSessionName="exp")["Credentials"]
as_role = lambda s: client(s, creds["AccessKeyId"], creds["SecretAccessKey"], creds["SessionToken"])
rddb, rs3, rsqs, rsm, rkms, rlam = (as_role(s) for s in
                                    ("dynamodb", "s3", "sqs", "secretsmanager", "kms", "lambda"))
key = {"pk": {"S": "a"}}

print("-- identity policies, per action and resource")
probe("GetItem on a granted table", "allowed", lambda: rddb.get_item(TableName=jobs_t, Key=key))
probe("GetItem on another table", "refused", lambda: rddb.get_item(TableName=budget_t, Key=key))
probe("Query (not granted) on the granted table", "refused", lambda: rddb.query(
    TableName=jobs_t, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "a"}}))
probe("DeleteItem allowed and explicitly denied", "refused", lambda: rddb.delete_item(TableName=jobs_t, Key=key))
probe("a wrong secret key for the role's access key", "refused", lambda: client(
    "dynamodb", creds["AccessKeyId"], "wrong", creds["SessionToken"]).get_item(TableName=jobs_t, Key=key))

print("-- transactions, per item")
put_jobs = {"Put": {"TableName": jobs_t, "Item": {"pk": {"S": "t1"}}}}
check_budget = {"ConditionCheck": {"TableName": budget_t, "Key": key,
                                   "ConditionExpression": "attribute_exists(pk)"}}
probe("TransactWriteItems Put jobs + ConditionCheck budget (no budget grant)", "refused",
      lambda: rddb.transact_write_items(TransactItems=[put_jobs, check_budget]))
probe("TransactWriteItems Put jobs + Update jobs", "allowed", lambda: rddb.transact_write_items(TransactItems=[
    {"Put": {"TableName": jobs_t, "Item": {"pk": {"S": "t2"}}}},
    {"Update": {"TableName": jobs_t, "Key": key, "UpdateExpression": "SET n = :n",
                "ExpressionAttributeValues": {":n": {"N": "2"}}}}]))
probe("TransactGetItems Get budget", "refused", lambda: rddb.transact_get_items(
    TransactItems=[{"Get": {"TableName": budget_t, "Key": key}}]))

print("-- conditions")
probe("ListBucket with s3:prefix uploads/ (condition met)", "allowed",
      lambda: rs3.list_objects_v2(Bucket=bucket, Prefix="uploads/u1/"))
probe("ListBucket with s3:prefix private/ (condition not met)", "refused",
      lambda: rs3.list_objects_v2(Bucket=bucket, Prefix="private/"))
probe("ListBucket without a prefix", "refused", lambda: rs3.list_objects_v2(Bucket=bucket))

print("-- S3 objects and bucket policies")
probe("GetObject under the granted prefix", "allowed", lambda: rs3.get_object(Bucket=bucket, Key="uploads/u1/a"))
probe("GetObject outside it", "refused", lambda: rs3.get_object(Bucket=bucket, Key="private/b"))
probe("PutObject (not granted)", "refused", lambda: rs3.put_object(Bucket=bucket, Key="uploads/u1/c", Body=b"y"))
url = rs3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "private/b"})


def fetch(u):
    try:
        urllib.request.urlopen(u, context=ssl.create_default_context(cafile=os.environ.get("AWS_CA_BUNDLE"))).read()
    except urllib.error.HTTPError as e:
        raise ClientError({"Error": {"Code": str(e.code)}}, "presigned") from e


probe("a URL presigned by the role for an object it may not read", "refused", lambda: fetch(url))
ssl_only = {"Version": "2012-10-17", "Statement": [{
    "Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "s3:*",
    "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"],
    "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]}
s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps(ssl_only))
probe(f"bucket policy: deny without TLS, role over {OVER}", PLAIN,
      lambda: rs3.get_object(Bucket=bucket, Key="uploads/u1/a"))
probe(f"bucket policy: deny without TLS, root over {OVER}", PLAIN,
      lambda: s3.get_object(Bucket=bucket, Key="uploads/u1/a"))
s3.delete_bucket_policy(Bucket=bucket)
deny_role = {"Version": "2012-10-17", "Statement": [{
    "Effect": "Deny", "Principal": {"AWS": role_arn}, "Action": "s3:GetObject",
    "Resource": f"arn:aws:s3:::{bucket}/*"}]}
s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps(deny_role))
probe("bucket policy: Deny naming the role, identity allows", "refused",
      lambda: rs3.get_object(Bucket=bucket, Key="uploads/u1/a"))
s3.delete_bucket_policy(Bucket=bucket)

print("-- SQS")
probe("SendMessage to the granted queue", "allowed", lambda: rsqs.send_message(QueueUrl=queue, MessageBody="x"))
probe("SendMessage to another queue", "refused", lambda: rsqs.send_message(QueueUrl=other_queue, MessageBody="x"))
probe("ReceiveMessage (not granted)", "refused", lambda: rsqs.receive_message(QueueUrl=queue))
# Last use of the granted queue: a TLS-only policy on it also refuses root over plain HTTP.
sqs.set_queue_attributes(QueueUrl=queue, Attributes={"Policy": json.dumps({"Version": "2012-10-17", "Statement": [{
    "Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "sqs:*", "Resource": queue_arn,
    "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]})})
probe(f"queue policy: deny without TLS, role over {OVER}", PLAIN,
      lambda: rsqs.send_message(QueueUrl=queue, MessageBody="x"))
probe(f"queue policy: deny without TLS, root over {OVER}", PLAIN,
      lambda: sqs.send_message(QueueUrl=queue, MessageBody="x"))

print("-- Secrets Manager")
probe("GetSecretValue on the granted secret", "allowed", lambda: rsm.get_secret_value(SecretId=secret))
probe("GetSecretValue on another secret", "refused", lambda: rsm.get_secret_value(SecretId=other_secret))
probe("PutSecretValue (not granted)", "refused", lambda: rsm.put_secret_value(SecretId=secret, SecretString="z"))
sm.put_resource_policy(SecretId=secret, ResourcePolicy=json.dumps({"Version": "2012-10-17", "Statement": [{
    "Effect": "Deny", "Principal": {"AWS": role_arn}, "Action": "secretsmanager:GetSecretValue", "Resource": "*"}]}))
probe("secret resource policy: Deny naming the role, identity allows", "refused",
      lambda: rsm.get_secret_value(SecretId=secret))

print("-- KMS")
probe("Encrypt with a key, no identity grant, default key policy", "refused",
      lambda: rkms.encrypt(KeyId=key_id, Plaintext=b"x"))

kms.put_key_policy(KeyId=key_id, PolicyName="default", Policy=json.dumps({"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{ACCOUNT}:root"}, "Action": "kms:*", "Resource": "*"},
    {"Effect": "Allow", "Principal": {"AWS": role_arn}, "Action": "kms:Encrypt", "Resource": "*"}]}))
probe("Encrypt after a key policy naming the role", "allowed", lambda: rkms.encrypt(KeyId=key_id, Plaintext=b"x"))
probe("Decrypt, the key policy grants only Encrypt", "refused", lambda: rkms.decrypt(
    CiphertextBlob=kms.encrypt(KeyId=key_id, Plaintext=b"x")["CiphertextBlob"]))

print("-- Lambda")
probe("Invoke a function, no lambda:InvokeFunction grant", "refused",
      lambda: rlam.invoke(FunctionName=fn, Payload=b"{}"))
lam.add_permission(FunctionName=fn, StatementId="role", Action="lambda:InvokeFunction", Principal=role_arn)
probe("Invoke after a function policy naming the role (AddPermission)", "allowed",
      lambda: rlam.invoke(FunctionName=fn, Payload=b"{}"))

print(f"{sum(RESULTS)} of {len(RESULTS)} probes answered as AWS does")
