"""``--order-by``: the order downloads start, in rclone's format (``size``, ``name`` or ``modtime``, then
``,ascending`` / ``,asc`` (the default) or ``,descending`` / ``,desc``).

The order holds among the files ready to start at once: the download tasks waiting in the run's pool (their URLs
fetched) start smallest first, say, while files discovered later (the walk goes on as downloads run) join the queue
in their place when they come; a file already started is never overtaken. rclone says the same of its transfer
queue. Ties keep the order the files came in. ``name`` is the remote path relative to the sync root; ``modtime``
the file entity's ``modifiedOn`` (a file with none counts as the oldest).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Tuple

from synclient.choices import Choice
from synclient.errors import ConfigError
from synclient.sync.plan.filters import modified_moment


class OrderKey(Choice):
    SIZE = "size"
    NAME = "name"
    MODTIME = "modtime"


_DIRECTIONS = {"ascending": False, "asc": False, "descending": True, "desc": True}


@dataclass(frozen=True)
class OrderBy:
    key: OrderKey
    descending: bool = False

    @classmethod
    def parse(cls, text: str) -> OrderBy:
        """``size``, ``name,descending``, ``modtime,asc``; anything else is a one-line ConfigError."""
        spelled = text.strip().lower()
        key, comma, direction = spelled.partition(",")
        if key not in {k.value for k in OrderKey} or (comma and direction not in _DIRECTIONS):
            raise ConfigError(
                f"order_by: not an order: {text!r} (size, name or modtime, then ,ascending or ,descending)"
            )
        return cls(OrderKey(key), _DIRECTIONS.get(direction, False))

    def __str__(self) -> str:
        return f"{self.key.value},{'descending' if self.descending else 'ascending'}"

    def sort_key(self, *, size: Optional[int], rel_path: str, modified_on: object) -> Tuple:
        """What the pool's download queue orders by (smaller first): descending is the key negated."""
        if self.key is OrderKey.NAME:
            if not self.descending:
                return tuple(ord(c) for c in rel_path)
            # negated code points end with one larger than any, so "ab" comes before its prefix "a"
            return tuple(-ord(c) for c in rel_path) + (1,)
        if self.key is OrderKey.SIZE:
            value = float(size if size is not None else 0)
        else:
            moment = modified_moment(modified_on)
            value = moment.timestamp() if moment is not None else -math.inf  # (none: the oldest)
        return (-value,) if self.descending else (value,)
