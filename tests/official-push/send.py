"""Sends pushes to the stand-in APNs and FCM with the services' client libraries.

The library's request is built here from the notification's plain fields (title, body, event
id, event type, job id) the way an app developer would from Apple's and Google's documentation
and from what docs/mobile.md promises the app, never from our adapter's payload: the test then
compares what the stand-in received from the library with what it received from us.

Reads one JSON object per line on stdin and prints one JSON line per input:
  {"service": "fcm", "url": "http://127.0.0.1:P", "account": {<service-account JSON>},
   "token": "...", "title": "...", "body": "...", "event_id": "...", "type": "...",
   "job_id": "..." | null}
    -> {"ok": true, "name": "projects/.../messages/N"}
     | {"ok": false, "error": "<exception class>", "code": "<FirebaseError code>", "status": 404}
  {"service": "apns", "url": "http://127.0.0.1:P", "key": "<p8 PEM>", "key_id": "...",
   "team_id": "...", "topic": "...", "token": "...", "title": "...", "body": "...",
   "event_id": "...", "type": "...", "job_id": "..." | null}
    -> {"status": "200", "reason": null, "id": "<apns-id>"} | {"status": "410", "reason": "Unregistered", ...}

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

# docs/mobile.md: a phone that is off longer than a day gets no stale "ready".
A_DAY = 24 * 60 * 60
# Apple: "apns-collapse-id … The value of this key must not exceed 64 bytes."
COLLAPSE_ID_MAX_BYTES = 64


def fcm_message(case):
    """FCM HTTP v1 `Message` as Google documents it: `notification` {title, body} for the system
    tray, `data` a map of string to string (docs/mobile.md: event_id, type, job_id; a value
    that is absent is left out, as FCM takes no null), and `android.collapse_key` the event id,
    so a repeated event replaces the one shown."""
    data = {"event_id": case["event_id"], "type": case["type"]}
    if case["job_id"] is not None:
        data["job_id"] = case["job_id"]
    return messaging.Message(
        token=case["token"],
        notification=messaging.Notification(title=case["title"], body=case["body"]),
        data=data,
        android=messaging.AndroidConfig(collapse_key=case["event_id"]),
    )


def apns_request(case):
    """An alert as Apple documents it: `aps.alert` {title, body} and the default sound, the
    app's own keys beside `aps` (docs/mobile.md: event_id, type, job_id); priority 10 (send at
    once), push type `alert`, expiry a day on, `apns-collapse-id` the event id (at most 64
    bytes). No `apns-id`: it is optional, and aioapns then sends a new UUID of its own."""
    collapse_id = case["event_id"]
    if len(collapse_id.encode()) > COLLAPSE_ID_MAX_BYTES:
        raise ValueError(f"apns-collapse-id over {COLLAPSE_ID_MAX_BYTES} bytes: {collapse_id}")
    message = {
        "aps": {"alert": {"title": case["title"], "body": case["body"]}, "sound": "default"},
        "event_id": case["event_id"],
        "type": case["type"],
        "job_id": case["job_id"],
    }
    return NotificationRequest(
        device_token=case["token"],
        message=message,
        time_to_live=A_DAY,
        priority=10,
        collapse_key=collapse_id,
        push_type=PushType.ALERT,
    )


def fcm(case):
    messaging._MessagingService.FCM_URL = case["url"] + "/v1/projects/{0}/messages:send"
    app = firebase_admin.initialize_app(
        credentials.Certificate(case["account"]), name=case["token"]
    )
    try:
        return {"ok": True, "name": messaging.send(fcm_message(case), app=app)}
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
    request = apns_request(case)
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
