"""One HTTP request with a JSON or raw body, as the cloud benches' drivers make them."""

import json
import urllib.error
import urllib.request


def http(method, url, body=None, headers=None, raw=None, tls=None, timeout=60):
    """(status, parsed JSON answer | raw bytes when `raw` was sent | error text). `tls`: an
    `ssl.SSLContext` for an https URL (the local cloud's own CA)."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if body is not None:
        req.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=tls if url.startswith("https") else None) as r:
            text = r.read()
            return r.status, (json.loads(text) if text and raw is None else text)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
