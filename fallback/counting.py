"""Counting pre-tokens: the counting step of training."""

from __future__ import annotations as _annotations

import collections as _collections

from .patterns import pretokenizer


def _count_into(counter, text, repair, special_re):
    """Add the pre-tokens of one document to a core's counter."""
    text = repair(text)
    if special_re is None:
        counter.add(text)
    else:
        for piece in special_re.split(text):
            if piece:
                counter.add(piece)


class _Counter:
    """The pure-Python core's pre-token counter (see CoreProtocol.counter)."""

    def __init__(self, pattern):
        self._split = pretokenizer(pattern)
        self._counts = _collections.Counter()

    def add(self, text):
        self._counts.update(self._split(text))

    def pack(self):
        return self._counts

    def add_packed(self, packed):
        self._counts.update(packed)

    def clear(self):
        self._counts = _collections.Counter()

    def __len__(self):
        return len(self._counts) - ("" in self._counts)

    def to_dict(self):
        self._counts.pop("", None)
        return {k.encode("utf-8"): v for k, v in self._counts.items()}
