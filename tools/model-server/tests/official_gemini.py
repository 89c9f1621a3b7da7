"""One call to the stand-in's Gemini side through Google's official Python client.

Run by `official_gemini.rs` with the venv that `cargo xtask test` installs (`.venv/openai`,
which holds `google-genai` beside `openai`):

    python official_gemini.py BASE_URL CALL_JSON

The library shapes the request from its own typed parameters (`types.Part.from_bytes`,
`types.GenerateContentConfig`, `types.ImageConfig`, a `types.Schema`) and parses the answer
into its own `GenerateContentResponse`. What it is given is written here as an app developer
would write it from Google's documentation and ours, never taken from our client: the aspect
ratio from the edit's pixel size, the image size the catalogue prices, and each answer's
`responseSchema` from the JSON shape docs/design.md documents ("The vision calls' answers").
The Rust test compares the request the library sent with ours through a capturing proxy.
It prints one JSON report; exit 0 when the call answered and parsed, 1 otherwise (the report
then says why: the status code and the canonical status of an `APIError`).
"""

import json
import math
import struct
import sys

from google import genai
from google.genai import errors, types

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# docs/operations.md: the catalogue's Gemini edit is priced for a 1K image.
IMAGE_SIZE = "1K"
# Gemini's `imageConfig.aspectRatio` values.
ASPECT_RATIOS = {"1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9"}


def aspect_ratio(size):
    """`1536x1024` → `3:2`; `auto` → None (the model keeps the input's)."""
    if size == "auto":
        return None
    width, height = (int(side) for side in size.split("x"))
    d = math.gcd(width, height)
    ratio = f"{width // d}:{height // d}"
    if ratio not in ASPECT_RATIOS:
        raise ValueError(f"Gemini has no aspect ratio {ratio}")
    return ratio


def obj(properties):
    """An object whose every property is required, in the order given (Gemini answers in
    `propertyOrdering`; our parser refuses a missing or extra field)."""
    names = list(properties)
    return types.Schema(
        type=types.Type.OBJECT, properties=properties, required=names, property_ordering=names
    )


# docs/design.md, "The vision calls' answers": the strict JSON each vision call answers.
COORD = types.Schema(type=types.Type.INTEGER, minimum=0, maximum=1000)
BOX = obj({"x0": COORD, "y0": COORD, "x1": COORD, "y1": COORD})
BOX.nullable = True
# A candidate's box is never null.
CANDIDATE = obj({
    "label": types.Schema(type=types.Type.STRING),
    "target_box": obj({"x0": COORD, "y0": COORD, "x1": COORD, "y1": COORD}),
})
SCHEMAS = {
    "check": obj({
        "ready": types.Schema(type=types.Type.BOOLEAN),
        "observation": types.Schema(type=types.Type.STRING),
        "questions": types.Schema(
            type=types.Type.ARRAY, items=types.Schema(type=types.Type.STRING), max_items=3
        ),
        "target_box": BOX,
        "candidates": types.Schema(type=types.Type.ARRAY, items=CANDIDATE, max_items=6),
    }),
    "review": obj({
        "verdict": types.Schema(type=types.Type.STRING, enum=["passed", "failed"]),
        "target_reads_as_medium": types.Schema(type=types.Type.BOOLEAN),
        "rest_photographic": types.Schema(type=types.Type.BOOLEAN),
        "style_leaked": types.Schema(type=types.Type.BOOLEAN),
        "notes": types.Schema(type=types.Type.STRING),
    }),
    "compare": obj({
        "outcome": types.Schema(type=types.Type.STRING, enum=["improved", "unchanged", "worse"]),
        "notes": types.Schema(type=types.Type.STRING),
    }),
}


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
        image_config=types.ImageConfig(aspect_ratio=aspect_ratio(call["size"]), image_size=IMAGE_SIZE),
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
        response_schema=SCHEMAS[call["kind"]],
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
