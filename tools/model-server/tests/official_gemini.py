"""One call to the stand-in's Gemini side through Google's official Python client.

Run by `official_gemini.rs` with the venv that `cargo xtask test` installs (`.venv/openai`,
which holds `google-genai` beside `openai`):

    python official_gemini.py BASE_URL CALL_JSON

The library shapes the request from its own typed parameters (`types.Part.from_bytes`,
`types.GenerateContentConfig`, `types.ImageConfig`, a `response_schema` it converts itself) and
parses the answer into its own `GenerateContentResponse`. It prints one JSON report; exit 0 when
the call answered and parsed, 1 otherwise (the report then says why: the status code and the
canonical status of an `APIError`).
"""

import json
import struct
import sys

from google import genai
from google.genai import errors, types

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(data):
    if len(data) < 24 or data[:8] != PNG_SIGNATURE or data[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", data[16:24])


def read(path):
    with open(path, "rb") as f:
        return f.read()


def client(base_url, job):
    options = types.HttpOptions(
        base_url=base_url,
        api_version="v1beta",
        headers={"X-Client-Request-Id": job},
        # One request: every request sent must be the one counted.
        retry_options=types.HttpRetryOptions(attempts=1),
    )
    return genai.Client(api_key="stand-in", http_options=options)


def parts(call):
    out = [types.Part.from_text(text=call["text"])]
    for i, image in enumerate(call["images"]):
        out.append(types.Part.from_text(text=f"Image {i + 1}: {image['label']}"))
        out.append(types.Part.from_bytes(data=read(image["path"]), mime_type="image/png"))
    return [types.Content(role="user", parts=out)]


def usage(response):
    u = response.usage_metadata
    return {
        "prompt_token_count": u.prompt_token_count,
        "candidates_token_count": u.candidates_token_count,
    } if u else None


def edit(api, call):
    config = types.GenerateContentConfig(
        response_modalities=["IMAGE"],
        candidate_count=1,
        image_config=types.ImageConfig(aspect_ratio=call["aspect_ratio"], image_size=call["image_size"]),
    )
    response = api.models.generate_content(model=call["model"], contents=parts(call), config=config)
    images = [p.inline_data.data for p in response.candidates[0].content.parts if p.inline_data]
    size = png_size(images[0]) if images else None
    return {
        "parsed_type": type(response).__name__,
        "finish_reason": str(response.candidates[0].finish_reason.value),
        "images": len(images),
        "width": size[0] if size else None,
        "height": size[1] if size else None,
        "usage": usage(response),
    }


def vision(api, call):
    config = types.GenerateContentConfig(
        system_instruction=call["system"],
        response_mime_type="application/json",
        response_schema=call["schema"],
        candidate_count=1,
        max_output_tokens=call["max_output_tokens"],
    )
    response = api.models.generate_content(model=call["model"], contents=parts(call), config=config)
    return {
        "parsed_type": type(response).__name__,
        "finish_reason": str(response.candidates[0].finish_reason.value),
        "content": response.text,
        "usage": usage(response),
    }


def main():
    base_url, call_path = sys.argv[1], sys.argv[2]
    with open(call_path, encoding="utf-8") as f:
        call = json.load(f)
    from google.genai import version
    report = {"version": version.__version__, "kind": call["kind"]}
    api = client(base_url, call["job"])
    try:
        report.update(edit(api, call) if call["kind"] == "edit" else vision(api, call))
    except errors.APIError as e:
        report["error"] = {"status": e.code, "canonical": e.status, "message": str(e.message)[:500]}
    except Exception as e:  # the report says what broke; the Rust test shows it
        report["error"] = {"exception": type(e).__name__, "message": str(e)[:2000]}
    print(json.dumps(report))
    return 0 if "error" not in report else 1


if __name__ == "__main__":
    sys.exit(main())
