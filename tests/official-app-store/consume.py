"""Sends consumption information with Apple's official app-store-server-library.

Reads one JSON object per line on stdin:
  {"url": "...", "key": "<.p8 PEM>", "key_id": "...", "issuer_id": "...", "bundle_id": "...",
   "transaction_id": "...", "percentage": 12000}
and prints one JSON line per input: {"ok": true} or {"ok": false, "status": 401, "error": ...}.
The client is the library's AppStoreServerAPIClient (its own ES256 token, headers and body)
with its base URL pointed at the stand-in: Apple's client has no setting for that.
"""

import json
import sys

from appstoreserverlibrary.api_client import APIException, AppStoreServerAPIClient
from appstoreserverlibrary.models.ConsumptionRequest import ConsumptionRequest
from appstoreserverlibrary.models.DeliveryStatus import DeliveryStatus
from appstoreserverlibrary.models.Environment import Environment

for line in sys.stdin:
    case = json.loads(line)
    client = AppStoreServerAPIClient(
        case["key"].encode(), case["key_id"], case["issuer_id"], case["bundle_id"], Environment.SANDBOX
    )
    client._base_url = case["url"]
    request = ConsumptionRequest(
        customerConsented=True,
        sampleContentProvided=True,
        deliveryStatus=DeliveryStatus.DELIVERED,
        consumptionPercentage=case["percentage"],
    )
    try:
        client.send_consumption_information(case["transaction_id"], request)
        out = {"ok": True}
    except APIException as e:
        out = {"ok": False, "status": e.http_status_code, "error": str(e.raw_api_error)}
    print(json.dumps(out), flush=True)
