"""Slurm's host list notation, both ways ("n[1-3,7]" <-> n1 n2 n3 n7), bounded, with one
error type for a host list or a switch tree that cannot be used (data layer)."""

from __future__ import annotations

import re


class TopologyError(ValueError):
    """A switch tree that cannot be used (one line naming the fix)."""


#: The most names a host list may expand to: more nodes than any partition has. A report or a
#: switch file may hold a typo (n[1-99999999]): without a bound every reader hung on it.
MAX_HOSTLIST_NAMES = 65536


def expand_hostlist(text: str, limit: int = MAX_HOSTLIST_NAMES) -> list[str]:
    """Slurm's host list notation: "n[1-3,7],gpu[01-02]" -> n1 n2 n3 n7 gpu01 gpu02. A
    TopologyError for a bracket left open or never opened ("n[3-", "n3]"), a range that runs
    backwards or a list of more than `limit` names."""
    names = []
    parts = re.findall(r"[^,\[]+(?:\[[^\]]*\])?[^,\[]*", text)
    # a part takes at most one [...]: every bracket of the text must be in one of those, else
    # the list is cut where a bracket is open ("n[3-" read as "n" and "3-")
    brackets = sum(1 for part in parts if re.fullmatch(r"[^\[\]]*\[[^\[\]]*\][^\[\]]*", part))
    if text.count("[") != brackets or text.count("]") != brackets:
        raise TopologyError(f"host list {text!r}: a bracket is not closed or not opened; write "
                            "e.g. n[1-3,7]")
    for part in parts:
        match = re.fullmatch(r"([^\[]*)\[([^\]]*)\](.*)", part)
        if not match:
            names.append(part)
            continue
        head, ranges, tail = match.groups()
        for item in ranges.split(","):
            low, _, high = item.partition("-")
            if not low.isdigit() or (high and not high.isdigit()):
                raise TopologyError(f"host list {text!r}: {item!r} is not a number or range")
            width, first, last = len(low), int(low), int(high or low)
            if last < first:
                raise TopologyError(f"host list {text!r}: range {item!r} runs backwards; write "
                                    f"[{last}-{first}]")
            if len(names) + last - first + 1 > limit:
                raise TopologyError(f"host list {text!r} names more than {limit} hosts; check "
                                    f"its ranges")
            for number in range(first, last + 1):
                names.append(f"{head}{number:0{width}d}{tail}")
    return names


def compress_hostlist(names: list[str] | tuple[str, ...] | set[str]) -> str:
    """The inverse of expand_hostlist, as `scontrol show hostlist` writes it: n1 n2 n3 n7 ->
    "n[1-3,7]"; names without a trailing number stay as they are."""
    numbered: list[tuple[str, str]] = []
    plain = []
    for name in sorted(set(names)):
        match = re.fullmatch(r"(.*?)(\d+)", name)
        if match:
            numbered.append((match[1], match[2]))
        else:
            plain.append(name)
    # a zero-padded number keeps its width ("gpu01"), and so does every number of that length
    # beside it ("gpu10"); others have none
    padded = {head: len(digits) for head, digits in numbered
              if digits.startswith("0") and len(digits) > 1}
    groups: dict[tuple[str, int], list[int]] = {}
    for head, digits in numbered:
        width = padded.get(head, 0) if len(digits) == padded.get(head) else 0
        groups.setdefault((head, width), []).append(int(digits))
    parts = list(plain)
    for (head, width), numbers in sorted(groups.items()):
        numbers.sort()
        runs, start = [], numbers[0]
        for previous, number in zip(numbers, [*numbers[1:], None], strict=True):
            if number is None or number != previous + 1:
                runs.append(f"{start:0{width}d}" if start == previous
                            else f"{start:0{width}d}-{previous:0{width}d}")
                start = number
        parts.append(f"{head}{runs[0]}" if len(numbers) == 1 else f"{head}[{','.join(runs)}]")
    return ",".join(parts)
