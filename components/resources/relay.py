"""Who sends a copy to whom when several peers need the same bytes (images, model caches): a
node that already holds them passes them on, so the holders double each round and N peers are
served in ceil(log2(N+1)) rounds instead of N copies from one node's link.

Holders in order: the source, then the peers. Peer j (1-based in that order) gets the bytes from
holder j - 2^floor(log2 j): round 1 source→p1; round 2 source→p2, p1→p3; round 3 source→p4,
p1→p5, p2→p6, p3→p7; and so on. With one peer it is the plain source→peer copy. A sender
sends one copy at a time (its link is the limit), so a copy waits for the one that brought the
bytes to its sender and for its sender's previous copy: `after` below."""

from __future__ import annotations

from typing import Sequence, TypeVar

T = TypeVar("T")


def relay_plan(source: T, peers: Sequence[T]) -> list[tuple[T, T, int, list[T]]]:
    """(sender, receiver, round, after) for each peer, in the order the peers were given; `after`:
    the receivers whose copies come first (the sender's own, the sender's previous one)."""
    holders = [source, *peers]
    plan = []
    last_sent: dict[int, int] = {}
    for j in range(1, len(holders)):
        r = j.bit_length()                      # round: j in [2^(r-1), 2^r)
        k = j - (1 << (r - 1))                  # the sender's place among the holders
        after = ([holders[k]] if k else []) + ([holders[last_sent[k]]] if k in last_sent else [])
        last_sent[k] = j
        plan.append((holders[k], holders[j], r, after))
    return plan
