"""Signs in at an OpenID Connect issuer as a client would, with Authlib: discovery,
authorization code + PKCE (S256), the sign-in form, the token endpoint, the ID token
verified against the JWKS (issuer, audience, expiry), then a refresh. Prints the tokens and
the verified claims as JSON. Usage: flow.py ISSUER CLIENT_ID REDIRECT_URI EMAIL"""

import json
import re
import sys

import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session
from authlib.jose import JsonWebKey, jwt

issuer, client_id, redirect_uri, email = sys.argv[1:5]
meta = requests.get(f"{issuer}/.well-known/openid-configuration", timeout=10).json()
assert meta["issuer"] == issuer, meta

verifier = generate_token(48)
client = OAuth2Session(
    client_id,
    redirect_uri=redirect_uri,
    scope="openid email",
    code_challenge_method="S256",
    token_endpoint_auth_method="none",
)
url, state = client.create_authorization_url(meta["authorization_endpoint"], code_verifier=verifier)

# The sign-in form: its hidden fields carry the request; the user types an address.
form = requests.get(url, timeout=10)
form.raise_for_status()
fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form.text))
fields["email"] = email
answer = requests.post(url.split("?")[0], data=fields, allow_redirects=False, timeout=10)
assert answer.status_code in (302, 303, 307), answer.text
location = answer.headers["location"]

token = client.fetch_token(
    meta["token_endpoint"], authorization_response=location, code_verifier=verifier
)
keys = JsonWebKey.import_key_set(requests.get(meta["jwks_uri"], timeout=10).json())
options = {"iss": {"essential": True, "value": issuer}, "aud": {"essential": True, "value": client_id}}
id_claims = jwt.decode(token["id_token"], keys, claims_options=options)
id_claims.validate()
access_claims = jwt.decode(token["access_token"], keys)
access_claims.validate()

refreshed = client.refresh_token(meta["token_endpoint"], refresh_token=token["refresh_token"])
again = jwt.decode(refreshed["id_token"], keys, claims_options=options)
again.validate()

print(json.dumps({
    "state_kept": state is not None and f"state={state}" in location,
    "id_token": token["id_token"],
    "access_token": token["access_token"],
    "id": dict(id_claims),
    "access": dict(access_claims),
    "refreshed_id": dict(again),
}))
