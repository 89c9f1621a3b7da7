"""Reads content credentials with the official C2PA library, one JSON case a line on stdin:
{"path": file, "format": media type, "anchors": PEM trust anchors}. Prints one JSON verdict a
line: the validation state, the active manifest's failure codes, its actions and ingredients
and the signer's issuer, or {"error": ...} when the file cannot be read."""
import json
import sys

import c2pa


def manifest_of(store, label):
    return (store.get("manifests") or {}).get(label) or {}


def read(case):
    settings = {
        "version": 1,
        "verify": {"verify_trust": True, "remote_manifest_fetch": False, "ocsp_fetch": False},
        "trust": {"trust_anchors": case["anchors"]},
    }
    context = c2pa.Context.from_json(json.dumps(settings))
    with open(case["path"], "rb") as stream:
        reader = c2pa.Reader(case["format"], stream, context=context)
        store = json.loads(reader.json())
        state = reader.get_validation_state()
    active = manifest_of(store, store.get("active_manifest"))
    results = (store.get("validation_results") or {}).get("activeManifest") or {}
    actions = []
    for assertion in active.get("assertions", []):
        if assertion["label"].startswith("c2pa.actions"):
            actions.extend(assertion["data"].get("actions", []))
    ingredients = [
        {
            "title": i.get("title"),
            "relationship": i.get("relationship"),
            "manifest": manifest_of(store, i.get("active_manifest")) or None,
            "thumbnail": "thumbnail" in i,
        }
        for i in active.get("ingredients", [])
    ]
    return {
        "state": str(state),
        "failures": [f["code"] for f in results.get("failure", [])],
        "actions": actions,
        "ingredients": ingredients,
        "issuer": (active.get("signature_info") or {}).get("issuer"),
        "claim_generator": active.get("claim_generator_info"),
        "manifest": active,
    }


for line in sys.stdin:
    case = json.loads(line)
    try:
        verdict = read(case)
    except Exception as e:  # the verdict names it: a file that cannot be read fails the test
        verdict = {"error": f"{type(e).__name__}: {e}"}
    print(json.dumps(verdict), flush=True)
