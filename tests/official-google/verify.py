"""Drives the stand-in Google with Google's official Python clients.

Reads one JSON object per line on stdin and prints one JSON line per input:

  {"kind": "publisher", "key": {service account JSON key}, "endpoint": "http://…/",
   "package": "...", "product": "...", "token": "...", "consume": true}
    google-api-python-client's discovery-based Android Publisher client (the discovery
    document bundled with the library, its api_endpoint the stand-in's) as a google-auth
    service account (its token_uri the stand-in's): purchases.products.get, then, when asked,
    consume and get again. Prints {"ok": true, "purchase": {...}, "after": {...}} or
    {"ok": false, "status": <HTTP status>}.

  {"kind": "voided", "key": …, "endpoint": …, "package": "...", "start": <ms>, "page": n}
    The same client's purchases.voidedpurchases.list from `start`, `page` entries a page,
    following tokenPagination.nextPageToken as Google documents. Prints
    {"ok": true, "orders": [orderId, …], "pages": n} or {"ok": false, "status": <HTTP status>}.

  {"kind": "push", "token": "...", "audience": "...", "certs_url": "...", "email": "..."}
    google-auth's id_token.verify_token against the certs URL, then the issuer check of
    id_token.verify_oauth2_token and the e-mail check of Pub/Sub's push sample. Prints
    {"ok": true} or {"ok": false, "error": "..."}.
"""

import json
import sys

import google.auth.transport.requests
from google.oauth2 import id_token, service_account
from googleapiclient.discovery import build
from googleapiclient.errors import HttpError

SCOPE = "https://www.googleapis.com/auth/androidpublisher"
# google.oauth2.id_token._GOOGLE_ISSUERS, as verify_oauth2_token checks them.
ISSUERS = ["accounts.google.com", "https://accounts.google.com"]


def client(case):
    creds = service_account.Credentials.from_service_account_info(case["key"], scopes=[SCOPE])
    return build(
        "androidpublisher",
        "v3",
        credentials=creds,
        client_options={"api_endpoint": case["endpoint"]},
        cache_discovery=False,
    )


def voided(case):
    voided = client(case).purchases().voidedpurchases()
    orders, pages, token = [], 0, None
    try:
        while True:
            args = {"packageName": case["package"], "startTime": case["start"],
                    "maxResults": case["page"]}
            if token:
                args["token"] = token
            page = voided.list(**args).execute()
            pages += 1
            orders += [v["orderId"] for v in page.get("voidedPurchases", [])]
            token = page.get("tokenPagination", {}).get("nextPageToken")
            if not token:
                return {"ok": True, "orders": orders, "pages": pages}
    except HttpError as e:
        return {"ok": False, "status": e.status_code}


def publisher(case):
    products = client(case).purchases().products()
    args = {"packageName": case["package"], "productId": case["product"], "token": case["token"]}
    try:
        out = {"ok": True, "purchase": products.get(**args).execute()}
        if case.get("consume"):
            products.consume(**args).execute()
            out["after"] = products.get(**args).execute()
        return out
    except HttpError as e:
        return {"ok": False, "status": e.status_code}


def push(case):
    request = google.auth.transport.requests.Request()
    try:
        claims = id_token.verify_token(
            case["token"], request, audience=case["audience"], certs_url=case["certs_url"]
        )
        if claims["iss"] not in ISSUERS:
            return {"ok": False, "error": "wrong issuer"}
        if claims.get("email") != case["email"] or not claims.get("email_verified"):
            return {"ok": False, "error": "wrong service account e-mail"}
        return {"ok": True}
    except Exception as e:  # every refusal of the library is a verdict, whatever its class
        return {"ok": False, "error": f"{type(e).__name__}: {e}"}


for line in sys.stdin:
    case = json.loads(line)
    out = {"publisher": publisher, "voided": voided, "push": push}[case["kind"]](case)
    print(json.dumps(out), flush=True)
