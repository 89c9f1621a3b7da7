"""Sends pushes to the stand-in APNs and FCM with the services' client libraries.

Reads one JSON object per line on stdin and prints one JSON line per input:
  {"service": "fcm", "url": "http://127.0.0.1:P", "account": {<service-account JSON>},
   "token": "...", "title": "...", "body": "...", "data": {...}, "collapse_key": "..."}
    -> {"ok": true, "name": "projects/.../messages/N"}
     | {"ok": false, "error": "<exception class>", "code": "<FirebaseError code>", "status": 404}
  {"service": "apns", "url": "http://127.0.0.1:P", "key": "<p8 PEM>", "key_id": "...",
   "team_id": "...", "topic": "...", "token": "...", "message": {...}, "id": "<uuid>",
   "collapse_key": "...", "ttl": 86400}
    -> {"status": "200", "reason": null, "id": "<uuid>"} | {"status": "410", "reason": "Unregistered", ...}

FCM: firebase-admin's service-account credential exchanges its JWT at the key's `token_uri`
(google-auth), and `messaging.send` posts to `_MessagingService.FCM_URL`, the one URL the SDK
has for FCM (no emulator variable for messaging): set to the stand-in's, nothing else changes.
APNs: aioapns connects to its protocol class's APNS_SERVER:APNS_PORT with the pool's SSL
context; the stand-in is h2c, so the pool gets the stand-in's host and port and no TLS. Its
h2 framing, headers, provider token and answer parsing are the library's own.
"""

import asyncio
import json
import sys
import warnings
from urllib.parse import urlparse

import firebase_admin
import google.auth.exceptions
from firebase_admin import credentials, exceptions, messaging
from aioapns import APNs, NotificationRequest, PushType
from aioapns.connection import APNsProductionClientProtocol


def fcm(case):
    messaging._MessagingService.FCM_URL = case["url"] + "/v1/projects/{0}/messages:send"
    app = firebase_admin.initialize_app(
        credentials.Certificate(case["account"]), name=case["token"]
    )
    message = messaging.Message(
        token=case["token"],
        notification=messaging.Notification(title=case["title"], body=case["body"]),
        data=case["data"],
        android=messaging.AndroidConfig(collapse_key=case["collapse_key"]),
    )
    try:
        return {"ok": True, "name": messaging.send(message, app=app)}
    except exceptions.FirebaseError as e:
        status = e.http_response.status_code if e.http_response is not None else None
        return {"ok": False, "error": type(e).__name__, "code": e.code, "status": status}
    except google.auth.exceptions.RefreshError as e:
        # The token endpoint refused the service account's assertion.
        return {"ok": False, "error": type(e).__name__, "code": None, "status": None, "message": str(e)}
    finally:
        firebase_admin.delete_app(app)


async def apns(case):
    url = urlparse(case["url"])

    class StandIn(APNsProductionClientProtocol):
        APNS_SERVER = url.hostname
        APNS_PORT = url.port

    client = APNs(
        key=case["key"], key_id=case["key_id"], team_id=case["team_id"], topic=case["topic"]
    )
    client.pool.protocol_class = StandIn
    client.pool.ssl_context = None  # h2c: HTTP/2 with prior knowledge, as the stand-in speaks
    request = NotificationRequest(
        device_token=case["token"],
        message=case["message"],
        notification_id=case["id"],
        time_to_live=case["ttl"],
        priority=10,
        collapse_key=case["collapse_key"],
        push_type=PushType.ALERT,
    )
    result = await client.send_notification(request)
    client.pool.close()
    return {"status": result.status, "reason": result.description, "id": result.notification_id}


# firebase-admin 7 deprecates `Message.token` for `fid` (a Firebase installation id); the app
# registers FCM registration tokens, which the v1 API still takes as `message.token`.
warnings.filterwarnings("ignore", "Message.token is deprecated", DeprecationWarning)

for line in sys.stdin:
    case = json.loads(line)
    out = fcm(case) if case["service"] == "fcm" else asyncio.run(apns(case))
    print(json.dumps(out), flush=True)
