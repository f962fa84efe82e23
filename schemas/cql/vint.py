"""Cassandra's variable-length integers (VIntCoding).

The number of leading 1-bits of the first byte is the count of extra bytes that
follow; the remaining bits of the first byte and the extra bytes form the value,
big-endian. Callers on hot paths inline the one-byte case (`b < 0x80`).
"""
from __future__ import annotations

# EXTRA_BYTES[b] = number of leading 1-bits of byte b = number of bytes after it.
EXTRA_BYTES = bytes(8 - (255 - b).bit_length() if b != 255 else 8 for b in range(256))
# FIRST_BYTE_MASK[b] keeps the value bits of the first byte.
FIRST_BYTE_MASK = bytes(0xFF >> EXTRA_BYTES[b] if EXTRA_BYTES[b] < 8 else 0 for b in range(256))

_MASK64 = (1 << 64) - 1
_SIGN64 = 1 << 63


def read_uvint(buf: bytes, p: int) -> tuple[int, int]:
    """Unsigned VInt at p -> (value as unsigned 64-bit, next position).

    Raises IndexError if the buffer ends inside the number.
    """
    b = buf[p]
    if b < 0x80:
        return b, p + 1
    n = EXTRA_BYTES[b]
    end = p + 1 + n
    if end > len(buf):
        raise IndexError("vint runs past the end of the buffer")
    return ((b & FIRST_BYTE_MASK[b]) << (8 * n)) | int.from_bytes(buf[p + 1:end], "big"), end


def read_vint(buf: bytes, p: int) -> tuple[int, int]:
    """Signed (zig-zag) VInt at p -> (value, next position)."""
    zz, p = read_uvint(buf, p)
    return (zz >> 1) ^ -(zz & 1), p


def to_int64(v: int) -> int:
    """Reinterpret an unsigned 64-bit value as signed two's complement."""
    v &= _MASK64
    return v - (1 << 64) if v & _SIGN64 else v



def write_uvint(v: int) -> bytes:
    """The unsigned VInt of a 64-bit value (a negative one is taken as its two's complement)."""
    v &= _MASK64
    size = 1
    while size < 9 and v >= 1 << (7 * size):
        size += 1
    if size == 9:
        return b"\xff" + v.to_bytes(8, "big")
    raw = bytearray(v.to_bytes(size, "big"))
    raw[0] |= (0xFF << (9 - size)) & 0xFF
    return bytes(raw)


def write_vint(v: int) -> bytes:
    """The zig-zag signed VInt of a 64-bit value."""
    return write_uvint((v << 1) ^ (v >> 63))
