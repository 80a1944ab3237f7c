"""HPACK (RFC 7541) as ``h2.py`` needs it: the server's header blocks written as literals that
leave the peer's table alone (so the encoder keeps no state), and whether a block the client
sent changes the decoder's table (when it does not, the headers it decodes to can be reused).
Decoding itself is the ``hpack`` package's."""

from __future__ import annotations


def _read_integer(block: bytes, at: int, prefix_bits: int) -> tuple[int, int]:
    """HPACK's integer with an N-bit prefix at ``block[at]``: (value, the offset after it)."""
    limit = (1 << prefix_bits) - 1
    value, at = block[at] & limit, at + 1
    if value < limit:
        return value, at
    shift = 0
    while True:
        byte, at = block[at], at + 1
        value += (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def changes_table(block: bytes) -> bool:
    """Whether decoding ``block`` changes the HPACK decoder's dynamic table: it holds a literal
    with incremental indexing or a table size update (RFC 7541 6.2.1, 6.3). Indexed fields and
    literals without indexing or never indexed leave it as it is. A malformed block counts as
    changing it (it is decoded, and refused, every time)."""
    at, size = 0, len(block)
    try:
        while at < size:
            first = block[at]
            if first & 0x80:  # indexed
                at = _read_integer(block, at, 7)[1]
            elif first & 0xC0 == 0x40 or first & 0xE0 == 0x20:
                return True
            else:  # a literal without indexing or never indexed: name index (0: a literal name), value
                name_index, at = _read_integer(block, at, 4)
                for _ in range(1 if name_index else 2):
                    length, at = _read_integer(block, at, 7)
                    at += length
        return at != size
    except IndexError:
        return True


def _integer(value: int, prefix_bits: int, first: int) -> bytes:
    """HPACK's integer with an N-bit prefix (RFC 7541 5.1), ``first`` holding the pattern bits."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out, value = bytearray([first | limit]), value - limit
    while value >= 128:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def literal(name: bytes, value: bytes) -> bytes:
    """A header as a literal without indexing, new name (RFC 7541 6.2.2): no dynamic-table entry,
    so the encoder keeps no state."""
    return b"\x00" + _integer(len(name), 7, 0) + name + _integer(len(value), 7, 0) + value


# :status 200 (static entry 8), content-type (static 31) application/grpc, both without indexing.
RESPONSE_HEADERS = b"\x88" + _integer(31, 4, 0) + _integer(16, 7, 0) + b"application/grpc"


# A status message is cut to this many characters, so the trailers fit one HEADERS frame (16 KiB
# at least) even percent-encoded (at most 12 bytes a character).
MESSAGE_CHARS = 1024


def trailers(status: int, message: str = "") -> bytes:
    """A call's trailers: ``grpc-status`` and, if any, ``grpc-message`` (percent-encoded, cut)."""
    block = literal(b"grpc-status", str(status).encode())
    if message:
        safe = "".join(c if " " <= c <= "~" and c != "%" else "".join(f"%{b:02X}" for b in c.encode())
                       for c in message[:MESSAGE_CHARS])
        block += literal(b"grpc-message", safe.encode())
    return block
