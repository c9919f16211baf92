"""A bounded walk over a GGUF header: the reads :mod:`corral.hub.gguf_header` is built on.

A model file is whatever its author wrote: a folder or a hub repository may hold one crafted to
hurt whoever reads it (docs/security.md, "Model files"). So the walk is bounded whatever the
header claims, and everything wrong with it is a :class:`GGUFError`:

- every read is checked against the file's end; the file is read in chunks (``os.pread``, never
  mapped: a file cut short while mapped would kill the reader with SIGBUS);
- arrays of arrays are walked with a stack of their own, not by recursion, at most
  :data:`MAX_DEPTH` deep (llama.cpp reads no array of arrays at all);
- a key or tensor name longer than :data:`MAX_NAME` bytes is an error; a string value longer
  than :data:`MAX_TEXT`, or beyond :data:`MAX_TEXT_TOTAL` for the whole header, is skipped, never
  read (the caller sees no such key);
- the elements walked one by one (strings, arrays) are at most :data:`MAX_ITEMS` for the whole
  header, so that no header takes more than a fraction of a second to walk; counts of keys,
  tensors and array elements have bounds of their own.

The bounds are far above any model llama.cpp's converters write: the largest vocabularies and
merge lists are under a million strings together, chat templates tens of kilobytes.
Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
"""

from __future__ import annotations

import os
import struct

__all__ = [
    "MAX_DEPTH",
    "MAX_ITEMS",
    "MAX_NAME",
    "MAX_TEXT",
    "MAX_TEXT_TOTAL",
    "GGUFCursor",
    "GGUFError",
    "Scalar",
    "Truncated",
]

Scalar = int | float | bool | str

MAX_DEPTH = 4  # arrays inside arrays inside ...
MAX_NAME = 256  # bytes of a key's name (llama.cpp's tensor names are shorter still: 63)
MAX_TEXT = 1 << 20  # bytes of one string value that is read
MAX_TEXT_TOTAL = 4 << 20  # bytes of string values read from one header, all together
MAX_ITEMS = 1 << 22  # strings and arrays walked one by one, all arrays of a header together
MAX_ARRAY = 1 << 30  # elements of one array (llama.cpp's GGUF_MAX_ARRAY_ELEMENTS)
_CHUNK = 1 << 16  # bytes read at a time

# Value types by number: the struct of each fixed-size one.
_FIXED = {
    kind: struct.Struct(fmt)
    for kind, fmt in {
        0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
        11: "<q", 12: "<d",
    }.items()
}  # fmt: skip
STRING, ARRAY = 8, 9
_U32, _U64 = _FIXED[4], _FIXED[10]


class GGUFError(ValueError):
    """Not a GGUF file, or a header this reader refuses; the message says why."""


class Truncated(GGUFError):
    """The file ends where its header says there is more."""


class GGUFCursor:
    """Reads a header field by field from an open file of ``size`` bytes, from its start."""

    def __init__(self, fd: int, size: int) -> None:
        self._fd, self.size = fd, size
        self.pos = 0  # where the next field starts in the file
        self._buffer, self._base = b"", 0  # bytes read from the file at offset _base
        self._items_left, self._text_left = MAX_ITEMS, MAX_TEXT_TOTAL

    def _at(self, size: int) -> int:
        """The offset in the buffer of the next ``size`` bytes, reading them if needed."""
        if self.pos + size > self.size:
            raise Truncated("the file ends inside its header")
        offset = self.pos - self._base
        if offset < 0 or offset + size > len(self._buffer):
            self._base = self.pos
            self._buffer = os.pread(self._fd, max(size, _CHUNK), self.pos)
            if len(self._buffer) < size:  # the file shrank since its size was read
                raise Truncated("the file ends inside its header")
            offset = 0
        return offset

    def fixed(self, kind: int) -> int | float | bool:
        shape = _FIXED[kind]
        offset = self.pos - self._base
        if offset + shape.size > len(self._buffer):  # else in the buffer: the common case
            offset = self._at(shape.size)
        self.pos += shape.size
        value: int | float | bool = shape.unpack_from(self._buffer, offset)[0]
        return value

    def u32(self) -> int:
        return int(self.fixed(4))

    def count(self, limit: int, what: str) -> int:
        """A u64 count, refused beyond ``limit`` (``what`` names the things counted)."""
        value = int(self.fixed(10))
        if value > limit:
            raise GGUFError(f"corrupt header: {value} {what}")
        return value

    def raw(self, size: int) -> bytes:
        offset = self._at(size)
        self.pos += size
        return self._buffer[offset : offset + size]

    def skip(self, size: int) -> None:
        if self.pos + size > self.size:
            raise Truncated("the file ends inside its header")
        self.pos += size

    def name(self, what: str = "key", limit: int = MAX_NAME) -> str:
        """A key's (or tensor's) name: short, or the header is refused."""
        length = int(self.fixed(10))
        if length > limit:
            raise GGUFError(f"corrupt header: a {what} name of {length} bytes")
        return self.raw(length).decode("utf-8", "replace")

    def text(self) -> str | None:
        """A string value; ``None`` (skipped, never read) when it is longer than the caps."""
        length = int(self.fixed(10))
        if length > MAX_TEXT or length > self._text_left:
            self.skip(length)
            return None
        self._text_left -= length
        return self.raw(length).decode("utf-8", "replace")

    def value(self, kind: int) -> Scalar | None:
        """A key's value of type ``kind``; ``None`` for an array or a string too long to read
        (both skipped)."""
        if kind in _FIXED:
            return self.fixed(kind)
        if kind == STRING:
            return self.text()
        self.skip_value(kind)
        return None

    def skip_value(self, kind: int) -> None:
        if kind in _FIXED:
            self.skip(_FIXED[kind].size)
        elif kind == STRING:
            self.skip(int(self.fixed(10)))
        elif kind == ARRAY:
            self._skip_array()
        else:
            raise GGUFError(f"corrupt header: unknown value type {kind}")

    def _array_head(self) -> tuple[int, int]:
        return self.u32(), self.count(MAX_ARRAY, "array elements")

    def _spend(self, items: int) -> None:
        if items > self._items_left:
            raise GGUFError(f"corrupt header: more than {MAX_ITEMS} array elements to walk")
        self._items_left -= items

    def _skip_array(self) -> None:
        """An array (its element type and count come next), arrays in it included: one stack
        entry per array being walked, the element type and the elements left in it."""
        stack = [self._array_head()]
        while stack:
            kind, left = stack.pop()
            if kind == ARRAY and left:
                stack.append((kind, left - 1))
                if len(stack) >= MAX_DEPTH:
                    raise GGUFError(f"corrupt header: arrays nested deeper than {MAX_DEPTH}")
                self._spend(1)
                stack.append(self._array_head())
            elif kind == STRING:
                self._skip_strings(left)
            elif kind in _FIXED:
                self.skip(left * _FIXED[kind].size)  # one jump over the whole array
            elif kind != ARRAY:
                raise GGUFError(f"corrupt header: unknown array element type {kind}")

    def _skip_strings(self, count: int) -> None:
        """``count`` strings: only their lengths are read (a vocabulary is most of a header,
        hence the loop over the buffer rather than a call per string)."""
        self._spend(count)
        unpack = _U64.unpack_from
        while count:
            self._at(8)  # the next length is in the buffer
            buffer, offset = self._buffer, self.pos - self._base
            last = len(buffer) - 8
            while count and offset <= last:
                offset += 8 + unpack(buffer, offset)[0]
                count -= 1
            self.pos = self._base + offset
        if self.pos > self.size:
            raise Truncated("the file ends inside its header")
