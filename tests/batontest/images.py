"""Real image headers (PNG, JPEG, GIF, WebP) of a chosen size, and their data URLs: the media tests read sizes
from the bytes a user's screenshot would carry."""

from __future__ import annotations

import base64
import struct
import zlib


def png(width: int, height: int, payload: int = 0) -> bytes:
    """A real PNG header (IHDR) of ``width`` x ``height`` followed by ``payload`` bytes of IDAT noise."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = lambda kind, data: struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", bytes(range(256)) * (payload // 256))


def decodable_png(width: int, height: int) -> bytes:
    """A complete PNG of one colour that an image decoder opens (Hermes 0.22's vision tool decodes the image before it
    sends it; ``png``'s IDAT is noise)."""
    chunk = lambda kind, data: struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\0" + bytes((40, 90, 200)) * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def jpeg(width: int, height: int, exif: int = 0) -> bytes:
    """SOI, an APP1 segment of ``exif`` bytes (a camera's EXIF block), then the SOF0 frame header."""
    app1 = b"\xff\xe1" + struct.pack(">H", exif + 2) + b"\0" * exif
    return b"\xff\xd8" + app1 + b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + b"\0" * 9


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\0" * 8


def webp_vp8x(width: int, height: int) -> bytes:
    size = (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    body = b"VP8X" + struct.pack("<I", 10) + b"\0" * 4 + size
    return b"RIFF" + struct.pack("<I", len(body) + 4) + b"WEBP" + body


def data_url(data: bytes, kind: str = "image/png") -> str:
    return f"data:{kind};base64," + base64.b64encode(data).decode()
