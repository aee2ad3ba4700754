"""A read-only word table held in a few flat arrays instead of a dict of Python strings.

The G2P libraries keep their dictionaries as plain dicts: misaki's English lexicons (a "gold" and a
"silver" list per dialect) and jieba's prefix dictionary, hundreds of thousands of entries each. Every
entry there is a key object, a value object and a hash-table slot, many times the bytes of the word
itself, and a server builds every language its voices speak at start. :class:`PackedMap` keeps the same
entries as one string of all keys, one of all text values (or one array of integer values), their end
offsets and the keys' hashes, sorted (docs/benchmarks.md, "Memory: the G2P word tables packed").

A lookup finds the key's hash by bisection and compares the key itself, so it answers exactly what the
dict would, if several times slower: the G2P libraries look up a handful of words per word of text.
Hashes are Python's own, which differ between processes; a map is built in the process that uses it
and never saved.
"""

from __future__ import annotations

import json
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping
from itertools import accumulate
from typing import Any


def _texts(texts: Iterable[str]) -> tuple[str, array[int]]:
    """``texts`` joined into one string, with the end offset of each in it."""
    parts = list(texts)
    return "".join(parts), array("I", accumulate(map(len, parts)))


def _piece(text: str, ends: array[int], i: int) -> str:
    """The ``i``-th of the texts :func:`_texts` joined into ``text``."""
    return text[ends[i - 1] if i else 0 : ends[i]]


class PackedMap(Mapping[str, Any]):
    """A frozen ``str`` → value mapping with the answers of the dict it was built from.

    Values that are all ``int`` are kept in an integer array, ``str`` values in one string. Any other
    value (misaki's few words read by part of speech, a dict of tag → phonemes) is kept there as JSON
    and read back as a new object on each lookup: a few thousand small objects kept alive would be
    spread over the memory the dict is built in and keep most of it from being returned. Keys are
    compared by equality, so a lookup never confuses two keys whose hashes collide.
    """

    def __init__(self, entries: Mapping[str, Any]) -> None:
        keys = sorted(entries, key=hash)
        self._hashes = array("q", map(hash, keys))
        self._keys, self._key_ends = _texts(keys)
        values = [entries[key] for key in keys]
        self._ints: array[int] | None = None
        self._encoded = array("I")  # the indexes, ascending, of values kept as JSON
        if values and all(type(value) is int for value in values):
            self._ints = array("q", values)
            self._values, self._value_ends = "", array("I")
        else:
            self._encoded.extend(i for i, value in enumerate(values) if not isinstance(value, str))
            texts = (value if isinstance(value, str) else json.dumps(value) for value in values)
            self._values, self._value_ends = _texts(texts)

    def _index(self, key: object) -> int:
        """Where ``key`` is kept, or -1."""
        try:
            wanted = hash(key)
        except TypeError:  # unhashable: a dict would raise, and no such key is here
            return -1
        hashes, ends = self._hashes, self._key_ends
        i = bisect_left(hashes, wanted)
        while i < len(hashes) and hashes[i] == wanted:
            if _piece(self._keys, ends, i) == key:
                return i
            i += 1
        return -1

    def _value(self, i: int) -> Any:
        if self._ints is not None:
            return self._ints[i]
        text = _piece(self._values, self._value_ends, i)
        encoded = self._encoded
        j = bisect_left(encoded, i)
        return json.loads(text) if j < len(encoded) and encoded[j] == i else text

    def __getitem__(self, key: str) -> Any:
        i = self._index(key)
        if i < 0:
            raise KeyError(key)
        return self._value(i)

    def get(self, key: str, default: Any = None) -> Any:
        i = self._index(key)
        return default if i < 0 else self._value(i)

    def __contains__(self, key: object) -> bool:
        return self._index(key) >= 0

    def __iter__(self) -> Iterator[str]:
        return (_piece(self._keys, self._key_ends, i) for i in range(len(self._key_ends)))

    def __len__(self) -> int:
        return len(self._key_ends)
