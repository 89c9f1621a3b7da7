"""Verifies webhook deliveries with the official Standard Webhooks library.

Reads one JSON object per line on stdin: {"secret": "whsec_...", "headers": {...}, "body": "..."}
and prints one JSON line per input: {"ok": true, "type": ...} or {"ok": false, "error": ...}.
"""

import json
import sys

import standardwebhooks
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

for line in sys.stdin:
    case = json.loads(line)
    try:
        payload = Webhook(case["secret"]).verify(case["body"], case["headers"])
        print(json.dumps({"ok": True, "type": payload.get("type")}), flush=True)
    except WebhookVerificationError as e:
        print(json.dumps({"ok": False, "error": str(e)}), flush=True)
