"""A PNG's size and pixels, read with the standard library (zlib and the chunk layout of the PNG
spec): enough for the screenshot test to check what Chromium drew, without a pin for an image
library. 8-bit RGB and RGBA only, not interlaced: what Chromium writes."""

from __future__ import annotations

import struct
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {2: 3, 6: 4}     # colour type: RGB, RGBA


@dataclass(frozen=True)
class Image:
    width: int
    height: int
    rows: tuple[bytes, ...]     # unfiltered scanlines
    channels: int

    def colours(self) -> Counter:
        """(r, g, b) -> the number of pixels of that colour."""
        out: Counter = Counter()
        for row in self.rows:
            rgb = [row[c::self.channels] for c in range(3)]
            out.update(zip(*rgb))
        return out


def size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == SIGNATURE and data[12:16] == b"IHDR", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def read(path: Path) -> Image:
    data = path.read_bytes()
    assert data[:8] == SIGNATURE, f"{path} is not a PNG"
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in CHANNELS and not interlace, f"{path}: depth {depth}, colour type {colour}"
    channels = CHANNELS[colour]
    raw = zlib.decompress(b"".join(idat))
    stride = width * channels
    rows, previous = [], bytes(stride)
    for y in range(height):
        start = y * (stride + 1)
        row = unfilter(raw[start], bytearray(raw[start + 1:start + 1 + stride]), previous, channels)
        rows.append(bytes(row))
        previous = row
    return Image(width, height, tuple(rows), channels)


def unfilter(kind: int, row: bytearray, up: bytes, bpp: int) -> bytearray:
    """Undo one scanline's filter (PNG spec, section 9): None, Sub, Up, Average, Paeth."""
    if kind == 0:
        return row
    if kind == 2:
        return bytearray((a + b) & 0xFF for a, b in zip(row, up))
    for i in range(len(row)):
        left = row[i - bpp] if i >= bpp else 0
        if kind == 1:
            row[i] = (row[i] + left) & 0xFF
        elif kind == 3:
            row[i] = (row[i] + (left + up[i]) // 2) & 0xFF
        elif kind == 4:
            above, corner = up[i], up[i - bpp] if i >= bpp else 0
            p = left + above - corner
            pa, pb, pc = abs(p - left), abs(p - above), abs(p - corner)
            row[i] = (row[i] + (left if pa <= pb and pa <= pc else above if pb <= pc else corner)) & 0xFF
        else:
            raise AssertionError(f"unknown PNG filter {kind}")
    return row
