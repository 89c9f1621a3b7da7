"""One call to the stand-in model server through OpenAI's official Python client.

Run by `official_client.rs` with the venv that `cargo xtask test` installs (`.venv/openai`):

    python official_client.py BASE_URL CALL_JSON

BASE_URL ends in `/v1`. CALL_JSON describes one call with our own prompts and images (the Rust
test writes it from `atelier_shared::prompts`); this script shapes the request the way the
official library does it (its typed parameters, its multipart encoding, its JSON body) and
never copies a request body our client built. It prints one JSON report on stdout: what the
library parsed the answer into, validated strictly against the library's own response models.
It also judges the request our client sent (`ours` in CALL_JSON) by the library's own parameter
names and typed parameter dicts. Exit status 0 when the call answered 200 and the answer validated, 1 otherwise (the report
then says why).
"""

import base64
import copy
import inspect
import json
import struct
import sys
import typing

import openai
from openai.lib._pydantic import _ensure_strict_json_schema
from openai.types import ImagesResponse, image_edit_params
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionContentPartParam,
    ChatCompletionSystemMessageParam,
    completion_create_params,
)
from openai.types.shared_params import ResponseFormatJSONSchema
from pydantic import TypeAdapter

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(data):
    """(width, height) of a PNG, or None when the bytes are not one."""
    if len(data) < 24 or data[:8] != PNG_SIGNATURE or data[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", data[16:24])


def read(path):
    with open(path, "rb") as f:
        return f.read()


def data_url(path):
    return "data:image/png;base64," + base64.b64encode(read(path)).decode("ascii")


def client(base_url):
    # No retries: every request the library sends must be the one compared.
    return openai.OpenAI(base_url=base_url, api_key="stand-in", max_retries=0, timeout=60.0)


def edit(api, call):
    # Several images go as a list of (filename, bytes, content type) tuples, as documented.
    images = [(i["filename"], read(i["path"]), "image/png") for i in call["images"]]
    kwargs = {}
    if call.get("mask"):
        kwargs["mask"] = (call["mask"]["filename"], read(call["mask"]["path"]), "image/png")
    raw = api.images.with_raw_response.edit(
        model=call["model"],
        image=images,
        prompt=call["prompt"],
        size=call["size"],
        quality=call["quality"],
        n=call["n"],
        extra_headers={"X-Client-Request-Id": call["job"]},
        **kwargs,
    )
    parsed = raw.parse()
    # The library builds its models leniently; validate the raw answer strictly as well.
    validated = ImagesResponse.model_validate(raw.http_response.json())
    first = (validated.data or [None])[0]
    b64 = first.b64_json if first is not None else None
    png = base64.b64decode(b64, validate=True) if b64 else b""
    size = png_size(png)
    usage = validated.usage
    return {
        "status": raw.http_response.status_code,
        "parsed_type": type(parsed).__name__,
        "images": len(validated.data or []),
        "png": size is not None,
        "width": size[0] if size else None,
        "height": size[1] if size else None,
        "usage": usage.model_dump() if usage is not None else None,
    }


def chat(api, call):
    content = [{"type": "text", "text": call["text"]}]
    for n, image in enumerate(call["images"], start=1):
        content.append({"type": "text", "text": f"Image {n}: {image['label']}"})
        content.append(
            {"type": "image_url", "image_url": {"url": data_url(image["path"]), "detail": "high"}}
        )
    schema = call["schema"]
    raw = api.chat.completions.with_raw_response.create(
        model=call["model"],
        messages=[
            {"role": "system", "content": call["system"]},
            {"role": "user", "content": content},
        ],
        response_format={
            "type": "json_schema",
            "json_schema": {"name": call["schema_name"], "strict": True, "schema": schema},
        },
        max_completion_tokens=call["max_completion_tokens"],
        # Sent only for a reasoning model (the catalogue's row says which), as our client does.
        **({"reasoning_effort": call["reasoning_effort"]} if call.get("reasoning_effort") else {}),
        extra_headers={"X-Client-Request-Id": call["job"]},
    )
    parsed = raw.parse()
    validated = ChatCompletion.model_validate(raw.http_response.json())
    choice = validated.choices[0]
    answer = json.loads(choice.message.content)
    usage = validated.usage
    return {
        "status": raw.http_response.status_code,
        "parsed_type": type(parsed).__name__,
        "finish_reason": choice.finish_reason,
        "refusal": choice.message.refusal,
        "content": choice.message.content,
        "answer_keys": sorted(answer),
        "usage": usage.model_dump(exclude_none=True) if usage is not None else None,
        # The library's own rules for a strict schema leave ours as it is (the order of
        # `required` aside: the library lists properties in their order).
        "schema_already_strict": normalised(_ensure_strict_json_schema(
            copy.deepcopy(schema), path=(), root=copy.deepcopy(schema)
        )) == normalised(schema),
    }


def conforms(annotation, value):
    """True when `value` is exactly an instance of the library's parameter type: strictly
    valid, and nothing dropped (an unknown key makes the validated copy differ)."""
    try:
        return TypeAdapter(annotation).validate_python(value, strict=True) == value
    except Exception:
        return False


def parameters(method):
    return set(inspect.signature(method).parameters) - {
        "extra_headers", "extra_query", "extra_body", "timeout"
    }


def check_our_edit(api, fields):
    """Problems with our client's multipart fields, judged by the library's `images.edit`
    parameters and their types. `fields` maps a part name to its text (None for a file)."""
    problems = []
    known = parameters(api.images.edit)
    hints = typing.get_type_hints(image_edit_params.ImageEditParamsBase)
    for name, value in fields.items():
        param = name[:-2] if name.endswith("[]") else name
        if param not in known:
            problems.append(f"{name}: not a parameter of images.edit")
        elif value is not None and param in hints and param not in ("image", "mask"):
            # Multipart sends every value as text; the library writes numbers as digits.
            typed = int(value) if value.isdigit() else value
            if not conforms(hints[param], typed):
                problems.append(f"{name}={value!r}: not a valid {param}")
    return problems


def check_our_chat(api, body):
    """Problems with our client's JSON body, judged by the library's `chat.completions.create`
    parameters and its typed dicts for messages, content parts and the response format."""
    problems = []
    known = parameters(api.chat.completions.create)
    hints = typing.get_type_hints(completion_create_params.CompletionCreateParamsBase)
    for key, value in body.items():
        if key not in known:
            problems.append(f"{key}: not a parameter of chat.completions.create")
        elif key in ("model", "max_completion_tokens", "reasoning_effort") and not conforms(
            hints[key], value
        ):
            problems.append(f"{key}={value!r}: not a valid {key}")
    if not conforms(ResponseFormatJSONSchema, body.get("response_format")):
        problems.append("response_format: not a ResponseFormatJSONSchema")
    messages = body.get("messages") or []
    if len(messages) != 2:
        problems.append(f"messages: {len(messages)} messages, expected system and user")
        return problems
    system, user = messages
    if not conforms(ChatCompletionSystemMessageParam, system):
        problems.append("messages/0: not a ChatCompletionSystemMessageParam")
    if set(user) != {"role", "content"} or user.get("role") != "user":
        problems.append("messages/1: not a user message of role and content")
    for i, part in enumerate(user.get("content") or []):
        if not conforms(ChatCompletionContentPartParam, part):
            problems.append(f"messages/1/content/{i}: not a ChatCompletionContentPartParam")
    return problems


def normalised(schema):
    if isinstance(schema, dict):
        return {
            k: sorted(v) if k == "required" else normalised(v) for k, v in schema.items()
        }
    if isinstance(schema, list):
        return [normalised(v) for v in schema]
    return schema


def main():
    base_url, call_path = sys.argv[1], sys.argv[2]
    with open(call_path, encoding="utf-8") as f:
        call = json.load(f)
    report = {"version": openai.__version__, "kind": call["kind"]}
    api = client(base_url)
    try:
        if call["kind"] == "edit":
            report["our_request_problems"] = check_our_edit(api, call["ours"])
            report.update(edit(api, call))
        else:
            report["our_request_problems"] = check_our_chat(api, call["ours"])
            report.update(chat(api, call))
    except openai.APIStatusError as e:
        report["error"] = {
            "status": e.status_code,
            "class": type(e).__name__,
            "code": getattr(e, "code", None),
            "body": e.response.text[:2000],
        }
    except Exception as e:  # the report says what broke; the Rust test shows it
        report["error"] = {"exception": type(e).__name__, "message": str(e)[:2000]}
    print(json.dumps(report))
    return 0 if "error" not in report and report.get("status") == 200 else 1


if __name__ == "__main__":
    sys.exit(main())
