"""Keys of the write-sharded ranking index.

Every score item carries two index attributes:

* ``rpk`` = ``{boardId}#{period}#{shard}``: the board's ranking is split across
  ``shards`` partitions; a member's shard is a hash of its id, so it is known
  without a read. (Or ``rpkB`` = ``{boardId}#{period}#B{shard}``, the same in the second
  index, ``RankIndexB``: a board re-sharded reads one or the other, podium.layouts.)
* ``rsk``: a string whose byte order *is* the board's listing order. It starts with
  an order-preserving encoding of the score (negated for ``desc`` boards, so that
  better always sorts first), then for ``tieBreak: earliest`` the time the score
  was reached, then the member id. Because it ends with the member id it is unique
  on the board, so a merge of the shards by ``rsk`` is the exact listing, and a
  cursor is simply the last ``rsk`` returned.

Rank by COUNT follows: the members strictly better than a score are exactly the
index entries whose ``rsk`` is below ``score_bound(score)``.
"""

from __future__ import annotations

import hashlib
from decimal import Decimal

from podium import periods
from podium.models import SHARD_MARK, BoardSettings, Placement, ScoreState
from podium.numbers import EXACT
from podium.periods import ALL_TIME
from podium.values import frozen

SEPARATOR = "#"  # below every digit, so a shorter mantissa sorts first
NEGATIVE_END = "~"  # above every digit, so a longer negative mantissa sorts first
EXPONENT_BIAS = 500
REACHED_WIDTH = 17  # microseconds since the epoch, zero-padded


def shard_of(member_id: str, shards: int) -> int:
    """The member's write shard: stable across processes and releases."""
    digest = hashlib.blake2b(member_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


def rank_partition_key(board_id: str, period: str, shard: int, index: str = "A") -> str:
    """A shard's partition key in one of the two ranking indexes (``models.RANK_INDEXES``)."""
    return f"{board_id}{SEPARATOR}{period}{SEPARATOR}{SHARD_MARK[index]}{shard}"


def encode_decimal(value: Decimal) -> str:
    """An order-preserving, prefix-safe string for a finite Decimal."""
    if value.is_zero():
        return "1"
    normal = value.normalize(EXACT)
    sign, digits, _ = normal.as_tuple()
    exponent = normal.adjusted() + EXPONENT_BIAS
    mantissa = "".join(str(d) for d in digits)
    if not sign:
        return f"2{exponent:03d}{mantissa}"
    flipped = "".join(str(9 - d) for d in digits)
    return f"0{999 - exponent:03d}{flipped}{NEGATIVE_END}"


def decode_decimal(text: str) -> tuple[Decimal, str]:
    """Decode the number at the start of ``text``; return it and the rest of the text."""
    kind = text[0]
    if kind == "1":
        return Decimal(0), text[1:]
    if kind == "2":
        exponent = int(text[1:4]) - EXPONENT_BIAS
        end = 4
        while end < len(text) and text[end].isdigit():
            end += 1
        mantissa = text[4:end]
        sign = ""
    elif kind == "0":
        exponent = 999 - int(text[1:4]) - EXPONENT_BIAS
        end = text.index(NEGATIVE_END, 4)
        mantissa = "".join(str(9 - int(c)) for c in text[4:end])
        end += 1
        sign = "-"
    else:
        raise ValueError(f"not an encoded number: {text!r}")
    value = Decimal(f"{sign}{mantissa[0]}.{mantissa[1:] or '0'}E{exponent}").normalize(EXACT)
    return value, text[end:]


def member_of_key(sort_key: str) -> str:
    """The member id at the end of a sort key, whatever the board's settings: ids never
    contain ``#``, and the key's other parts end with one."""
    return sort_key.rsplit(SEPARATOR, 1)[1]


_MIRROR_SUM = 0x20 + 0x7E  # sort keys are printable ASCII: each character maps into the same range
_MIRROR_END = "\x7f"  # above every mirrored character


def mirror(key: str) -> str:
    """A string whose order against other mirrored keys is the reverse of ``key``'s, so
    that code that reads the listing from the top can read it from the bottom: every
    character is reflected within printable ASCII, and the end mark puts a key after the
    keys it is a prefix of."""
    return "".join(chr(_MIRROR_SUM - ord(c)) for c in key) + _MIRROR_END


def unmirror(mirrored: str) -> str:
    return "".join(chr(_MIRROR_SUM - ord(c)) for c in mirrored[:-1])


def just_below(key: str) -> str:
    """The greatest string that sorts below ``key`` among index sort keys, for an
    inclusive ``BETWEEN``: sort keys are ASCII, so after the lowered last character a
    single U+10FFFF (the highest code point, and the highest UTF-8 bytes) outranks
    whatever follows in any key."""
    if not key:
        raise ValueError("no key sorts below the empty string")
    return key[:-1] + chr(ord(key[-1]) - 1) + "\U0010ffff"


def just_above(key: str) -> str:
    """A string above ``key`` with no index sort key between them, for an exclusive lower
    end of a ``BETWEEN``: a key that sorts above ``key`` either differs from it at some
    character or extends it, and every character of a sort key is above the space."""
    return key + " "


@frozen
class RankOrder:
    """How one board orders its members: the part of its settings the sort key needs."""

    descending: bool
    earliest: bool

    def score_bound(self, score: Decimal) -> str:
        """Every entry with a strictly better score sorts below this; no entry equals it."""
        ordered = EXACT.minus(score) if self.descending else score
        return encode_decimal(ordered) + SEPARATOR

    def score_end(self, score: Decimal) -> str:
        """Every entry with this score or a better one sorts below this; every worse one
        sorts above it (the end of a band of scores): ``score_bound`` with its separator
        raised by one, above the separator that follows the score in every key of it, and
        below the digit or end mark that a longer encoded score has there."""
        return self.score_bound(score)[:-1] + chr(ord(SEPARATOR) + 1)

    def sort_key(self, score: Decimal, member_id: str, reached_at_us: int) -> str:
        if self.earliest:
            return f"{self.score_bound(score)}{reached_at_us:0{REACHED_WIDTH}d}{SEPARATOR}{member_id}"
        return f"{self.score_bound(score)}{member_id}"

    def parse(self, sort_key: str) -> tuple[Decimal, str]:
        """The score and member id held in an index sort key."""
        ordered, rest = decode_decimal(sort_key)
        score = EXACT.minus(ordered) if self.descending else ordered
        member_id = rest[1:]
        if self.earliest:
            member_id = member_id[REACHED_WIDTH + 1 :]
        return (score if not score.is_zero() else Decimal(0)), member_id


def order_of(settings: BoardSettings) -> RankOrder:
    """How a board orders its members: the part of its settings the sort key needs."""
    return RankOrder(descending=settings.order == "desc", earliest=settings.tie_break == "earliest")


def placement(
    board_id: str, settings: BoardSettings, member_id: str, state: ScoreState, period: str
) -> Placement:
    """Where the member's score item goes in the ranking index: its shard's partition, its
    sort key, and, on a time-windowed board, when the period's ranking expires; while a
    re-shard runs, its partition in the other index too (``settings.also``)."""
    expires = None
    if period != ALL_TIME:
        expires = periods.expires_at(settings.reset, period, settings.retain_periods)
    also = None
    if settings.also is not None:
        also = member_partition(board_id, period, member_id, *settings.also)
    return Placement(
        partition=member_partition(board_id, period, member_id, settings.index, settings.shards),
        sort_key=order_of(settings).sort_key(state.score, member_id, state.reached_at_us),
        expires=expires,
        also=also,
    )


def member_partition(board_id: str, period: str, member_id: str, index: str, shards: int) -> str:
    """A member's partition in one index laid out on ``shards`` shards: it depends on the
    member and the count only, never on the score."""
    return rank_partition_key(board_id, period, shard_of(member_id, shards), index)


def partitions(board_id: str, settings: BoardSettings, period: str) -> list[str]:
    """The shard partitions of a board's ranking in one period: those of the index it reads."""
    return [rank_partition_key(board_id, period, shard, settings.index) for shard in range(settings.shards)]
