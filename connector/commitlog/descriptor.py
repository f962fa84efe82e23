"""Segment descriptor: the header at the start of every commit log segment.

    int32 version | int64 id | uint16 N | N bytes JSON parameters | int32 CRC

The CRC covers version, the id as low word then high word, N widened to four bytes
and the parameters (CommitLogDescriptor.writeHeader).
"""
from __future__ import annotations

import json
import re
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from .errors import CorruptSegment, CrcMismatch, EncryptedSegment, TruncatedSegment, UnsupportedVersion

# Descriptor version -> messaging version the mutations are serialized with.
MESSAGING_VERSIONS = {6: 10, 7: 12, 8: 13}

_FIXED = struct.Struct(">iqH")
_CRC_INPUT = struct.Struct(">iIII")
_UINT32 = struct.Struct(">I")
_NAME = re.compile(r"CommitLog-(\d+)-(\d+)\.log$")
_COMPRESSOR_PACKAGE = "org.apache.cassandra.io.compress."


@dataclass(frozen=True, slots=True)
class Descriptor:
    version: int
    segment_id: int
    parameters: dict = field(hash=False, compare=False)
    header_length: int

    @property
    def messaging_version(self) -> int:
        return MESSAGING_VERSIONS[self.version]

    @property
    def compression(self) -> str | None:
        """Short compressor class name (e.g. 'LZ4Compressor'), or None if uncompressed."""
        name = self.parameters.get("compressionClass")
        if not name:
            return None
        return name[len(_COMPRESSOR_PACKAGE):] if name.startswith(_COMPRESSOR_PACKAGE) else name

    @property
    def encrypted(self) -> bool:
        return "encKeyAlias" in self.parameters and "encCipher" in self.parameters


def segment_id_from_name(path: str | Path) -> int | None:
    """Segment id encoded in a `CommitLog-<version>-<id>.log` file name, if it is one."""
    match = _NAME.search(Path(path).name)
    return int(match.group(2)) if match else None


def read_descriptor(buf, segment: str) -> Descriptor:
    """Parse and verify the header at the start of `buf` (bytes, mmap or memoryview)."""
    if len(buf) < _FIXED.size:
        raise TruncatedSegment(segment, len(buf), "file ends inside the segment header")
    version, segment_id, params_length = _FIXED.unpack_from(buf, 0)
    end = _FIXED.size + params_length
    if len(buf) < end + 4:
        raise TruncatedSegment(segment, len(buf), "file ends inside the segment header")
    params = bytes(buf[_FIXED.size:end])
    expected = zlib.crc32(params, zlib.crc32(_CRC_INPUT.pack(
        version, segment_id & 0xFFFFFFFF, (segment_id >> 32) & 0xFFFFFFFF, params_length)))
    (stored,) = _UINT32.unpack_from(buf, end)
    if stored != expected:
        raise CrcMismatch(segment, end, f"header CRC {stored:#010x} != computed {expected:#010x}")
    if version not in MESSAGING_VERSIONS:
        raise UnsupportedVersion(segment, 0, f"unsupported descriptor version {version}")
    try:
        parameters = json.loads(params.decode("utf-8"))
    except ValueError as exc:
        raise CorruptSegment(segment, _FIXED.size, f"header parameters are not JSON: {exc}") from None
    if not isinstance(parameters, dict):
        raise CorruptSegment(segment, _FIXED.size, "header parameters are not a JSON object")
    descriptor = Descriptor(version, segment_id, parameters, end + 4)
    named_id = segment_id_from_name(segment)
    if named_id is not None and named_id != segment_id:
        raise CorruptSegment(segment, 4, f"header id {segment_id} differs from the file name id {named_id}")
    if descriptor.encrypted:
        raise EncryptedSegment(segment, _FIXED.size, "unsupported: encrypted segment")
    return descriptor
