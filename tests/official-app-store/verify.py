"""Verifies App Store signed data with Apple's official app-store-server-library.

Reads one JSON object per line on stdin:
  {"root": "<base64 DER>", "bundle_id": "...", "app_apple_id": 123, "kind": "transaction" | "notification", "jws": "..."}
and prints one JSON line per input: {"ok": true, "id": ...} or {"ok": false, "error": ...}.
The verifier is the library's SignedDataVerifier for the SANDBOX environment with online
checks off: it checks the x5c chain to the given root (OpenSSL, strict), Apple's OIDs, the
ES256 signature, the bundle id and the environment (LOCAL_TESTING and XCODE would skip all that).
"""

import base64
import json
import sys

from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier, VerificationException

for line in sys.stdin:
    case = json.loads(line)
    verifier = SignedDataVerifier(
        [base64.b64decode(case["root"])],
        enable_online_checks=False,
        environment=Environment.SANDBOX,
        bundle_id=case["bundle_id"],
        app_apple_id=case["app_apple_id"],
    )
    try:
        if case["kind"] == "transaction":
            tx = verifier.verify_and_decode_signed_transaction(case["jws"])
            out = {"ok": True, "id": tx.transactionId}
        else:
            n = verifier.verify_and_decode_notification(case["jws"])
            tx = verifier.verify_and_decode_signed_transaction(n.data.signedTransactionInfo)
            out = {"ok": True, "id": n.notificationUUID, "type": n.rawNotificationType, "transaction": tx.transactionId}
    except VerificationException as e:
        out = {"ok": False, "error": str(e.status)}
    print(json.dumps(out), flush=True)
