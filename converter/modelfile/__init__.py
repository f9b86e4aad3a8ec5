"""tracecvt's model archive (.tcmodel): the intermediate model stored losslessly.

The schema is ``proto/tracecvt_model.proto``; ``tracecvt_model_pb2`` is generated from it
(``proto/README.md`` says how).  ``converter/writers/model.py`` writes a file,
``converter/readers/model.py`` reads one back; ``compare.py`` tells whether two models are the
same.  This module holds what both sides share.
"""

from __future__ import annotations

import struct

FORMAT_NAME = "model"
SUFFIX = ".tcmodel"
MAGIC_TEXT = "tracecvt-model"
# Field 1 (magic), wire type 2, length 14: the first bytes of every (decompressed) file.
MAGIC = b"\x0a\x0e" + MAGIC_TEXT.encode("ascii")
FORMAT_VERSION = 1
# The End record (ModelFile field 15, length 5, holding End.crc32 as fixed32): the last
# 7 bytes of a file are END_PREFIX + crc32 (little endian) of everything before them.
END_PREFIX = b"\x7a\x05\x0d"
END_SIZE = len(END_PREFIX) + 4
pack_crc = struct.Struct("<I").pack
unpack_crc = struct.Struct("<I").unpack

# ContainerKind values, and the Column field number of refs (the last of a mixed column's
# per-value kinds), as in proto/tracecvt_model.proto (a test checks them against the generated
# classes): the reader uses them without importing protobuf until it parses a file.
LIST, TUPLE, DICT, DICT_TYPED_KEYS, JSON = 1, 2, 3, 4, 5
REF = 7

# RunMeta fields with a place of their own in the schema; any other field goes to Meta.more.
META_FIELDS = frozenset({"name", "format", "tool", "tool_version", "device", "clock",
                         "source_files", "extra", "warnings"})


def sniff(head: bytes) -> bool:
    """Is ``head`` (the first decompressed bytes of a file) the start of a model file?"""
    return head.startswith(MAGIC)
