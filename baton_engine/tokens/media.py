"""What an image or a document costs in a prompt: ONE definition for every request view, backend and estimate.

Why: providers charge an image by its size, not by its bytes, and no text tokenizer can count one (a
~300 KB base64 PNG counted as text is ~75,000 tokens; its provider cost is ~1,600). So every media part is
taken out of the request the tokenizer counts and costed here, from the provider's published rules:

* Anthropic: ``width * height / 750`` tokens after the image is scaled to fit a 1,568 px long edge and
  ~1.15 megapixels; its own size table sends 1,092 x 1,092 and 784 x 1,568 unscaled, so the pixel limit
  here is the larger, 1,229,312 (at most 1,640 tokens);
* OpenAI (high detail): scaled to fit 2,048 x 2,048, then its short side to 768 px; 85 + 170 per 512 px tile
  (at most 1,445 tokens).

A view does not know which provider will read it, so an image's placeholder costs the larger of the two for its
size (``BOUND``: a conservative bound for both) and keeps each provider's own figure beside it; a route whose provider
is known (``rule_of``: Anthropic, also on Bedrock and OpenRouter for Claude models; OpenAI) is counted at its
provider's figure (``priced``), any other route (a self-hosted server, an aggregator) at the bound. The size is read
cheaply from the first bytes (PNG, JPEG, GIF, WebP headers); ``UNKNOWN_IMAGE_TOKENS`` (the larger maximum, each
provider's own maximum by its rule) when it cannot be read (a URL, another format). An OpenAI-shaped part that asks
for ``detail: "low"`` costs OpenAI's flat low-detail price (``LOW_DETAIL_TOKENS``, 85 tokens): only OpenAI-shaped
requests carry the field. Every such cost is an estimate: a count that holds one names its share
(``TokenCount.media_tokens``), and the route's verification learns the provider's media scale apart from the
text's (``tokens.verify``; a server with its own image rule, Qwen2.5-VL's 28-pixel patches, is scaled there).
A PDF costs ``PDF_PAGE_TOKENS`` a page (Anthropic renders each page as an image and extracts its text:
1,500-3,000 text tokens a page plus the image), other documents a token per 3 bytes (denser than any
tokenizer's text).

A view replaces each media part by a ``placeholder`` (``{"type": "media", "tokens": n}``, and ``"by"``: each
provider's figure when they differ): its payload never
reaches a cache key, and two views of one request (the estimator's chat messages, the transport's Anthropic or
Bedrock blocks) carry the same part. Pure: no I/O.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from collections.abc import Mapping, Sequence
from itertools import repeat
from typing import Any, Literal
from urllib.parse import urlsplit

MEDIA_PART = "media"  # the placeholder's part type: no provider uses it
_ANTHROPIC_LONG_EDGE, _ANTHROPIC_PIXELS, _ANTHROPIC_PIXELS_PER_TOKEN = 1568, 1568 * 784, 750
UNKNOWN_IMAGE_TOKENS = math.ceil(_ANTHROPIC_PIXELS / _ANTHROPIC_PIXELS_PER_TOKEN)  # 1,640: above OpenAI's 1,445
PDF_PAGE_TOKENS = 3000 + UNKNOWN_IMAGE_TOKENS
BYTES_PER_DOCUMENT_TOKEN = 3
_OPENAI_FIT, _OPENAI_SHORT_SIDE, _OPENAI_TILE, _OPENAI_BASE, _OPENAI_PER_TILE = 2048, 768, 512, 85, 170
LOW_DETAIL_TOKENS = _OPENAI_BASE  # OpenAI's documented cost of an image sent with detail "low", whatever its size
_IMAGE_TYPES = frozenset({"image", "image_url", "input_image"})
_DOCUMENT_TYPES = frozenset({"document", "file", "input_file"})
_HEADER_CHARS = 64  # base64 characters holding the PNG, GIF and WebP size fields
_JPEG_SCAN_CHARS = 96 * 1024  # a JPEG's frame header follows its EXIF block (thumbnails: up to 64 KB)
_PDF_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")


MediaRule = Literal["anthropic", "openai", "bound"]
ANTHROPIC: MediaRule = "anthropic"
OPENAI: MediaRule = "openai"
BOUND: MediaRule = "bound"  # the larger of the two: a route whose provider's rule is not known
_ANTHROPIC_HOSTS = ("api.anthropic.com",)
_OPENAI_HOSTS = ("api.openai.com", "chatgpt.com")


def rule_of(*, provider: Any = None, base_url: Any = None, model: Any = None, api_mode: Any = None) -> MediaRule:
    """Whose published image rule prices a route's images: Anthropic's for its Messages API and for Claude models
    wherever they are served (Bedrock, OpenRouter); OpenAI's for its own API and hosts; else the bound."""
    provider, model = str(provider or "").lower(), str(model or "").lower()
    host = urlsplit(str(base_url or "")).hostname or ""
    if api_mode == "anthropic_messages" or provider == "anthropic" or host in _ANTHROPIC_HOSTS or "claude" in model:
        return ANTHROPIC
    if provider in ("openai", "openai-codex") or host in _OPENAI_HOSTS:
        return OPENAI
    return BOUND


def image_tokens(width: int, height: int, rule: MediaRule = BOUND) -> int:
    """An image of ``width`` x ``height`` pixels by ``rule`` (default: the larger of Anthropic's and OpenAI's)."""
    return _image_costs(width, height)[rule]


def _image_costs(width: int, height: int) -> dict[MediaRule, int]:
    if width <= 0 or height <= 0:
        return _UNKNOWN_IMAGE_COSTS
    costs: dict[MediaRule, int] = {ANTHROPIC: _anthropic_tokens(width, height), OPENAI: _openai_tokens(width, height)}
    return {**costs, BOUND: max(costs.values())}


def _anthropic_tokens(width: int, height: int) -> int:
    scale = min(1.0, _ANTHROPIC_LONG_EDGE / max(width, height), math.sqrt(_ANTHROPIC_PIXELS / (width * height)))
    return math.ceil(int(width * scale) * int(height * scale) / _ANTHROPIC_PIXELS_PER_TOKEN)


def _openai_tokens(width: int, height: int) -> int:
    scale = min(1.0, _OPENAI_FIT / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, _OPENAI_SHORT_SIDE / min(w, h))
    w, h = w * scale, h * scale
    return _OPENAI_BASE + _OPENAI_PER_TILE * math.ceil(w / _OPENAI_TILE) * math.ceil(h / _OPENAI_TILE)


# An image whose size cannot be read: each rule's largest (OpenAI's: 8 tiles, a 768 x 2,048 image after scaling).
_UNKNOWN_IMAGE_COSTS: dict[MediaRule, int] = {ANTHROPIC: UNKNOWN_IMAGE_TOKENS, OPENAI: _openai_tokens(768, 2048),
                                              BOUND: UNKNOWN_IMAGE_TOKENS}


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG, GIF, WebP or JPEG header; None when it is none of these or cut short."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        return struct.unpack(">II", data[16:24])
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        return struct.unpack("<HH", data[6:10])
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        chunk = data[12:16]
        if chunk == b"VP8 ":
            width, height = struct.unpack("<HH", data[26:30])
            return width & 0x3FFF, height & 0x3FFF
        if chunk == b"VP8L":
            bits = int.from_bytes(data[21:25], "little")
            return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
        if chunk == b"VP8X":
            return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
        return None
    if data[:2] == b"\xff\xd8":
        return _jpeg_size(data)
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """The frame header (SOF0-SOF15 but DHT, JPG, DAC) after the segments before it."""
    at = 2
    while at + 9 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[at + 5:at + 9])
            return width, height
        at += 2 + int.from_bytes(data[at + 2:at + 4], "big")
    return None


def _decoded(data: str, chars: int | None = None) -> bytes:
    """The bytes of (a prefix of) base64 ``data``; b"" when it is not base64."""
    text = data if chars is None else data[:chars - chars % 4]
    try:
        return base64.b64decode(text, validate=False)
    except (binascii.Error, ValueError):
        return b""


Costs = dict[MediaRule, int]  # one figure per rule


def _same(tokens: int) -> Costs:
    """A cost no provider rule changes (a document, a placeholder without figures)."""
    return {ANTHROPIC: tokens, OPENAI: tokens, BOUND: tokens}


def _base64_image_costs(data: str) -> Costs:
    size = image_size(_decoded(data, _HEADER_CHARS))
    if size is None and _decoded(data, 4)[:2] == b"\xff\xd8":
        size = _jpeg_size(_decoded(data, _JPEG_SCAN_CHARS))
    return _image_costs(*size) if size else _UNKNOWN_IMAGE_COSTS


def _bytes_image_costs(data: bytes) -> Costs:
    size = image_size(data[:_JPEG_SCAN_CHARS])
    return _image_costs(*size) if size else _UNKNOWN_IMAGE_COSTS


def _document_tokens(data: bytes, media_type: str) -> int:
    if media_type.endswith("pdf") or data[:5] == b"%PDF-":
        return PDF_PAGE_TOKENS * max(1, len(_PDF_PAGE.findall(data)))
    return max(1, math.ceil(len(data) / BYTES_PER_DOCUMENT_TOKEN))


def _data_url(url: Any) -> tuple[str, str] | None:
    """(media type, base64 payload) of a ``data:`` URL; None for anything else."""
    if not isinstance(url, str) or not url.startswith("data:"):
        return None
    header, _, payload = url.partition(",")
    return header[5:].split(";", 1)[0], payload


def part_tokens(part: Any, rule: MediaRule = BOUND) -> int | None:
    """What one content part costs by ``rule`` when it is an image or a document (OpenAI ``image_url`` /
    ``input_image`` / ``file``, Anthropic ``image`` / ``document``, Bedrock ``{"image": ...}`` /
    ``{"document": ...}``, a placeholder); None when it is not a media part."""
    costs = _part_costs(part)
    return None if costs is None else costs[rule]


def _part_costs(part: Any) -> Costs | None:
    if not isinstance(part, Mapping):
        return None
    kind = part.get("type")
    if kind == MEDIA_PART:
        tokens = part.get("tokens")
        tokens = tokens if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0 else 0
        by = part.get("by")
        return {**_same(tokens), **{rule: cost for rule, cost in by.items() if rule in (ANTHROPIC, OPENAI)
                                    and isinstance(cost, int) and cost >= 0}} if isinstance(by, Mapping) \
            else _same(tokens)
    if kind is None:
        return _bedrock_costs(part)
    if kind in _IMAGE_TYPES:
        return _image_part_costs(part)
    if kind in _DOCUMENT_TYPES:
        return _same(_document_part_tokens(part))
    return None


def _low_detail(part: Mapping[str, Any]) -> bool:
    """An OpenAI-shaped image part that asks for low detail (chat: in ``image_url``; Responses: on the part)."""
    url = part.get("image_url")
    return part.get("detail") == "low" or (isinstance(url, Mapping) and url.get("detail") == "low")


def _image_part_costs(part: Mapping[str, Any]) -> Costs:
    source = part.get("source")
    if isinstance(source, Mapping):  # Anthropic
        data = source.get("data")
        return _base64_image_costs(data) if source.get("type") == "base64" and isinstance(data, str) \
            else _UNKNOWN_IMAGE_COSTS
    url = part.get("image_url", part.get("url"))
    if isinstance(url, Mapping):
        url = url.get("url")
    found = _data_url(url)
    costs = _base64_image_costs(found[1]) if found else _UNKNOWN_IMAGE_COSTS
    # low detail is OpenAI's flat price, honoured wherever the rule is not Anthropic's (which has no such setting)
    return {**costs, OPENAI: LOW_DETAIL_TOKENS, BOUND: LOW_DETAIL_TOKENS} if _low_detail(part) else costs


def _document_part_tokens(part: Mapping[str, Any]) -> int:
    source = part.get("source")
    if isinstance(source, Mapping):  # Anthropic: base64, text or url
        data = source.get("data")
        if isinstance(data, str):
            raw = _decoded(data) if source.get("type") == "base64" else data.encode("utf-8", "replace")
            return _document_tokens(raw, str(source.get("media_type") or ""))
        return PDF_PAGE_TOKENS
    file = part.get("file") if isinstance(part.get("file"), Mapping) else part
    found = _data_url(file.get("file_data"))
    return _document_tokens(_decoded(found[1]), found[0]) if found else PDF_PAGE_TOKENS


def _bedrock_costs(part: Mapping[str, Any]) -> Costs | None:
    for key in ("image", "document"):
        block = part.get(key)
        if isinstance(block, Mapping) and len(part) == 1:
            source = block.get("source")
            data = source.get("bytes") if isinstance(source, Mapping) else None
            if not isinstance(data, (bytes, bytearray)):
                return _UNKNOWN_IMAGE_COSTS if key == "image" else _same(PDF_PAGE_TOKENS)
            if key == "image":
                return _bytes_image_costs(bytes(data))
            return _same(_document_tokens(bytes(data), str(block.get("format") or "")))
    return None


def placeholder(tokens: int, by: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The part a view puts where a media part was: its cost (the bound), each provider's figure where they differ
    (``by``), no payload."""
    return {"type": MEDIA_PART, "tokens": tokens, **({"by": dict(by)} if by else {})}


def as_placeholder(part: Any) -> Any:
    """``part`` as a placeholder when it is a media part, else ``part`` itself."""
    costs = _part_costs(part)
    if costs is None:
        return part
    by = {rule: costs[rule] for rule in (ANTHROPIC, OPENAI) if costs[rule] != costs[BOUND]}
    return placeholder(costs[BOUND], by)


def content_lists(messages: Sequence[Any]) -> Sequence[int]:
    """Indexes of the messages whose content is a list, the only ones that can hold media parts. Why at C speed:
    every request carries the whole history, and a Python step per message made reading each request grow with
    it. A list that is not all plain dicts gets every index (the caller checks each item itself)."""
    if not set(map(type, messages)) <= {dict}:
        return range(len(messages))
    kinds = list(map(type, map(dict.get, messages, repeat("content"))))
    lists = {kind for kind in set(kinds) if issubclass(kind, list)}
    return [index for index, kind in enumerate(kinds) if kind in lists] if lists else ()


def content_with_placeholders(content: Any) -> Any:
    """A content list with each media part a placeholder (the same list when it has none)."""
    if not isinstance(content, list):
        return content
    converted = [as_placeholder(part) for part in content]
    return content if all(a is b for a, b in zip(converted, content)) else converted


def priced(request: Mapping[str, Any], rule: MediaRule) -> Mapping[str, Any]:
    """A view's chat request with each placeholder at ``rule``'s figure (the request itself under the bound, or
    when no placeholder has another figure): what a route whose provider is known counts."""
    messages = request.get("messages")
    if rule == BOUND or not isinstance(messages, list):
        return request
    out = None
    for index in content_lists(messages):
        message = messages[index]
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(content, list) or not any(isinstance(part, Mapping) and "by" in part for part in content):
            continue
        if out is None:
            out = list(messages)
        out[index] = {**message, "content": [
            placeholder(part_tokens(part, rule)) if isinstance(part, Mapping) and part.get("type") == MEDIA_PART
            else part for part in content]}  # type: ignore[arg-type]
    return request if out is None else {**request, "messages": out}


def split_request(request: Mapping[str, Any]) -> tuple[Mapping[str, Any], int]:
    """``(request without its media parts, what they cost)``: the tokenizer counts the first, the second is added.
    The request itself (no copy) when it has none."""
    messages = request.get("messages")
    if not isinstance(messages, list):
        return request, 0
    total, out = 0, None
    for index in content_lists(messages):
        message = messages[index]
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(content, list):
            continue
        costs = [part_tokens(part) for part in content]
        if all(cost is None for cost in costs):
            continue
        if out is None:
            out = list(messages)
        total += sum(cost for cost in costs if cost is not None)
        out[index] = {**message, "content": [part for part, cost in zip(content, costs) if cost is None]}
    return (request, 0) if out is None else ({**request, "messages": out}, total)
