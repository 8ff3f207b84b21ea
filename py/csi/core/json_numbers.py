"""JSON numbers a grammar lets a model write, as xgrammar EBNF: digit-limited (a small model would
otherwise write digits until ``max_tokens``) and, under JSON Schema bounds, exactly the numbers in
the interval. xgrammar 0.1.27 writes wrong bounds (numbers out of range, or malformed ones, on
integers and non-integers alike; measured against ``jsonschema``), so bounded numbers never reach
its converter: the schema carries a marker string (``NumberRange.marker``) where the number goes,
and ``bounded_numbers`` swaps each marker in the converter's EBNF for the rules built here.

The limits: a non-integer number has at most ``MAX_DIGITS`` digits (a lone ``0`` before the point
not counted), so its decimal value and its nearest binary64 double order the same way against any
bound a JSON parser hands over (both sides have at most 15 significant digits, or the bound is the
shortest text of its double): a float-based validator agrees with the grammar. Its exponent, only
without bounds, has at most ``MAX_EXPONENT_DIGITS`` digits. An integer lies within
±``SAFE_INTEGER`` (JavaScript's safe integers) and has no fraction or exponent."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal, localcontext
from functools import lru_cache

MAX_DIGITS = 15
MAX_EXPONENT_DIGITS = 2
SAFE_INTEGER = 2**53 - 1
MARKER_PREFIX = "csi-number-range:"

_MARKER = re.compile(re.escape(MARKER_PREFIX) + r"(integer|number):([\[(])([^,\])]*),([^,\])]*)([\])])")
_MARKER_LITERAL = re.compile(r'"\\"(' + re.escape(MARKER_PREFIX) + r'[^"\\]*)\\""')


@dataclass(frozen=True)
class NumberRange:
    """The numbers a schema node allows: ``low``..``high`` (``None``: unbounded) with open or closed
    ends; ``integer`` for integers."""

    integer: bool
    low: Decimal | None = None
    low_open: bool = False
    high: Decimal | None = None
    high_open: bool = False

    def marker(self) -> str:
        """The string a schema holds (as a ``const``) where this range's number goes."""
        low = "" if self.low is None else str(self.low)
        high = "" if self.high is None else str(self.high)
        return (f"{MARKER_PREFIX}{'integer' if self.integer else 'number'}:{'(' if self.low_open else '['}"
                f"{low},{high}{')' if self.high_open else ']'}")

    @staticmethod
    def from_marker(text: str) -> NumberRange:
        found = _MARKER.fullmatch(text)
        if found is None:
            raise ValueError(f"not a number-range marker: {text!r}")
        kind, lo_end, low, high, hi_end = found.groups()
        return NumberRange(kind == "integer", Decimal(low) if low else None, lo_end == "(",
                           Decimal(high) if high else None, hi_end == ")")

    def capped(self) -> NumberRange:
        """Integers within ±``SAFE_INTEGER`` (the stricter of that and the given bound)."""
        if not self.integer:
            return self
        cap = Decimal(SAFE_INTEGER)
        low, low_open = (self.low, self.low_open) if self.low is not None and self.low > -cap else (-cap, False)
        high, high_open = (self.high, self.high_open) if self.high is not None and self.high < cap else (cap, False)
        return NumberRange(True, low, low_open, high, high_open)


def decimal_of(value: int | float) -> Decimal:
    """A bound as the decimal a JSON text wrote: an int exactly, a float as its shortest text."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("a bound must be finite")
        return Decimal(repr(value))
    return Decimal(value)


# ---- one sign: unsigned values in an interval, digit by digit -----------------------------------------


@dataclass(frozen=True)
class _Interval:
    """Unsigned values ``low``..``high`` (``high`` ``None``: unbounded)."""

    low: Decimal
    low_open: bool
    high: Decimal | None
    high_open: bool


def _digit(x: Decimal, place: int) -> int:
    """The digit of ``x`` (>= 0) at ``10**place``."""
    with localcontext() as ctx:
        ctx.prec = 1000
        return int(x.scaleb(-place)) % 10


def _more_below(x: Decimal, place: int) -> bool:
    """Whether ``x`` (>= 0) has a nonzero digit below ``10**place``."""
    with localcontext() as ctx:
        ctx.prec = 1000
        return x.scaleb(-place) % 1 != 0


def _class(lo: int, hi: int) -> str:
    return f'"{lo}"' if lo == hi else f"[{lo}-{hi}]"


def _repeat(atom: str, least: int, most: int) -> str:
    return atom if least == most == 1 else f"{atom}{{{least}}}" if least == most else f"{atom}{{{least},{most}}}"


# A state: ("int", digits still to write before the point, fraction room) or ("point", 0, room) or
# ("fraction", digits written after the point, room left), with whether the digits so far equal
# the low / high bound's (aligned at the point); past a bound, it no longer constrains.
_State = tuple[str, int, int, bool, bool]


class _Digits:
    """Right-linear EBNF rules for the unsigned decimals of an interval (canonical integer part,
    a fraction of at least one digit if any), named ``{prefix}_{k}``."""

    def __init__(self, interval: _Interval, integer: bool, prefix: str, rules: dict[str, str]) -> None:
        self.iv = interval
        self.integer = integer
        self.prefix = prefix
        self.rules = rules
        self.names: dict[_State, str | None] = {}
        self.count = 0

    def start(self) -> str | None:
        """The rule for the whole interval (``None``: no such number)."""
        alternatives = [alt for n in range(1, self._most_integer_digits() + 1) for alt in self._first_digits(n)]
        return self._rule(f"{self.prefix}_start", alternatives)

    def _most_integer_digits(self) -> int:
        high = self.iv.high
        top = len(str(int(high))) if high is not None else MAX_DIGITS
        return top if self.integer else min(top, MAX_DIGITS)

    def _first_digits(self, n: int) -> Iterator[str]:
        """Alternatives for numbers with ``n`` digits before the point."""
        bound = Decimal(10) ** n
        if self.iv.low >= bound:
            return  # every n-digit number is below the interval
        lo_t, hi_t = self._still_low(True, n), self.iv.high is not None and self.iv.high < bound
        firsts = [(0, 9)] if n == 1 else [(1, 9)]
        if n == 1 and not self.integer:
            firsts = [(0, 0), (1, 9)]  # a lone 0 leaves the whole digit budget to the fraction
        for lo, hi in firsts:
            room = 0 if self.integer else MAX_DIGITS - (0 if hi == 0 else n)
            yield from self._moves(lo, hi, n - 1, lo_t, hi_t, self._then(n - 1, room))

    @staticmethod
    def _then(place: int, room: int) -> Callable[[bool, bool], _State]:
        """The state once the integer digit at ``10**place`` is written, by tightness."""
        return lambda lo_t, hi_t: ("int", place, room, lo_t, hi_t) if place else ("point", 0, room, lo_t, hi_t)

    def _moves(self, lo: int, hi: int, place: int, lo_t: bool, hi_t: bool,
               next_state: Callable[[bool, bool], _State]) -> Iterator[str]:
        """Alternatives writing one digit in ``lo``..``hi`` at ``10**place``, grouped by the state
        they lead to; digits that leave the interval are left out."""
        groups: list[tuple[int, int, str]] = []
        for d in range(lo, hi + 1):
            nl = self._still_low(lo_t and d == _digit(self.iv.low, place), place)
            nh = hi_t and self.iv.high is not None and d == _digit(self.iv.high, place)
            if lo_t and d < _digit(self.iv.low, place):
                continue
            if hi_t and self.iv.high is not None and d > _digit(self.iv.high, place):
                continue
            name = self._name(next_state(nl, nh))
            if name is None:
                continue
            if groups and groups[-1][1] == d - 1 and groups[-1][2] == name:
                groups[-1] = (groups[-1][0], d, name)
            else:
                groups.append((d, d, name))
        for first, last, name in groups:
            yield f"{_class(first, last)} {name}"

    def _still_low(self, lo_t: bool, place: int) -> bool:
        """Whether a number equal to the low bound down to ``10**place`` is still held by it: not
        when the rest of a closed bound is zeros (every continuation is at least the bound)."""
        return lo_t and (self.iv.low_open or _more_below(self.iv.low, place))

    def _accepts(self, place: int, lo_t: bool, hi_t: bool) -> bool:
        """Whether the number may end with its last digit at ``10**place``."""
        iv = self.iv
        low_ok = not lo_t or (not _more_below(iv.low, place) and not iv.low_open)
        high_ok = not hi_t or iv.high is None or _more_below(iv.high, place) or not iv.high_open
        return low_ok and high_ok

    def _name(self, state: _State) -> str | None:
        if state not in self.names:
            self.count += 1
            name = f"{self.prefix}_{self.count}"
            self.names[state] = self._rule(name, list(self._body(state)))
        return self.names[state]

    def _rule(self, name: str, alternatives: list[str]) -> str | None:
        if not alternatives:
            return None
        self.rules[name] = " | ".join(f"({alt})" for alt in alternatives)
        return name

    def _body(self, state: _State) -> Iterator[str]:
        kind, count, room, lo_t, hi_t = state
        if not lo_t and not hi_t:
            yield from self._free(kind, count, room)
        elif kind == "int":
            yield from self._moves(0, 9, count - 1, lo_t, hi_t, self._then(count - 1, room))
        elif kind == "point":
            if self._accepts(0, lo_t, hi_t):
                yield '""'
            if room:
                nxt = self._name(("fraction", 0, room, lo_t, hi_t))
                if nxt is not None:
                    yield f'"." {nxt}'
        else:
            if count and self._accepts(-count, lo_t, hi_t):
                yield '""'
            if room:
                yield from self._moves(0, 9, -count - 1, lo_t, hi_t,
                                       lambda lt, ht: ("fraction", count + 1, room - 1, lt, ht))

    def _free(self, kind: str, count: int, room: int) -> Iterator[str]:
        """A state past both bounds: any digits, in closed form."""
        fraction = f'"." {_repeat("[0-9]", 1, room)}' if room else ""
        if kind == "int":
            yield f"{_repeat('[0-9]', count, count)} {self._name(('point', 0, room, False, False))}"
        elif kind == "point":
            yield '""'
            if fraction:
                yield fraction
        elif count == 0:
            yield _repeat("[0-9]", 1, room)
        else:
            yield '""'
            if room:
                yield _repeat("[0-9]", 1, room)


def _positive(r: NumberRange) -> _Interval | None:
    """The interval's numbers written without a sign, as unsigned values."""
    if r.high is not None and (r.high < 0 or (r.high == 0 and r.high_open)):
        return None
    low, low_open = (r.low, r.low_open) if r.low is not None and r.low >= 0 else (Decimal(0), False)
    return _Interval(low, low_open, r.high, r.high_open)


def _negative(r: NumberRange) -> _Interval | None:
    """The interval's numbers written with ``-``, as the unsigned values after it (``-0`` included)."""
    if r.low is not None and (r.low > 0 or (r.low == 0 and r.low_open)):
        return None
    low, low_open = (-r.high, r.high_open) if r.high is not None and r.high <= 0 else (Decimal(0), False)
    return _Interval(low, low_open, None if r.low is None else -r.low, r.low_open)


def range_rules(r: NumberRange, name: str) -> dict[str, str] | None:
    """EBNF rules (name -> body) whose rule ``name`` matches exactly the JSON numbers of ``r`` the
    limits allow, without exponent; ``None`` when there is none. Helper rules start with ``name_``."""
    r = r.capped()
    rules: dict[str, str] = {}
    alternatives = []
    positive, negative = _positive(r), _negative(r)
    signs = [('"-"? ', "s", positive)] if positive == negative else [("", "p", positive), ('"-" ', "n", negative)]
    for sign, tag, interval in signs:
        if interval is None:
            continue
        start = _Digits(interval, r.integer, f"{name}_{tag}", rules).start()
        if start is not None:
            alternatives.append(f"{sign}{start}")
    if not alternatives:
        return None
    return {name: " | ".join(f"({alt})" for alt in alternatives), **rules}


# ---- the converter's EBNF, its numbers bounded --------------------------------------------------------


def _unbounded_rules() -> dict[str, str]:
    """``csi_integer`` (any safe integer) and ``csi_number`` (any number within the limits)."""
    integer = range_rules(NumberRange(True), "csi_integer")
    mantissa = range_rules(NumberRange(False), "csi_mantissa")
    assert integer is not None and mantissa is not None
    exponent = f'[eE] [+\\-]? {_repeat("[0-9]", 1, MAX_EXPONENT_DIGITS)}'
    return {**integer, **mantissa, "csi_number": f"csi_mantissa ({exponent})?"}


_UNBOUNDED = _unbounded_rules()
_BASIC_RULE = re.compile(r"^(basic_number|basic_integer) ::= .*$", re.MULTILINE)
_REPLACEMENT = {"basic_number": "csi_number", "basic_integer": "csi_integer"}


@lru_cache(maxsize=64)
def bounded_numbers(ebnf: str) -> str:
    """xgrammar's EBNF for a JSON Schema (``compilable_schema``'s) with every number limited:
    ``basic_number`` and ``basic_integer`` (numbers without bounds, and any JSON's) digit-limited,
    each range marker literal replaced by its exact rules. Cached: a backend converts a request's
    schema each time, even when its compiled grammar is cached."""
    rules: dict[str, str] = {}
    names: dict[str, str] = {}

    def swap(found: re.Match[str]) -> str:
        marker = found.group(1)
        if marker not in names:
            names[marker] = f"csi_range_{len(names)}"
            built = range_rules(NumberRange.from_marker(marker), names[marker])
            if built is None:
                raise ValueError(f"no number the grammar can write lies in {marker[len(MARKER_PREFIX):]}")
            rules.update(built)
        return names[marker]

    out = _MARKER_LITERAL.sub(swap, ebnf)
    if MARKER_PREFIX in out:
        raise ValueError("a number-range marker was left in the grammar")
    out = _BASIC_RULE.sub(lambda m: f"{m.group(1)} ::= {_REPLACEMENT[m.group(1)]}", out)
    if "csi_number" in out or "csi_integer" in out:
        rules.update(_UNBOUNDED)
    return out.rstrip("\n") + "\n" + "".join(f"{name} ::= {body}\n" for name, body in rules.items())
