"""Model table of the provider simulator: context windows, cache rules, minimums, prices.

Each model name resolves to a :class:`ModelSpec` saying which caching rules apply
(``"anthropic"``: explicit ``cache_control`` breakpoints, P1–P3; ``"openai"``: automatic
prefix caching from 1024 tokens in 128-token steps), its minimum cacheable prefix in
tokens, its context window (tokens) and prices (USD per million tokens). Names are
matched exactly first, then by family pattern.
The table is per :class:`~simulator.provider.core.Provider`, so tests can override a
family's minimum (:meth:`ModelTable.override`).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, replace
from typing import Any

from simulator.provider.inputs import check_choice, check_int, check_number, check_str

ANTHROPIC = "anthropic"
OPENAI = "openai"

#: Default conformance model: a Claude-family model behind the OpenAI-compatible route.
DEFAULT_MODEL = "anthropic/claude-sonnet-4"


@dataclass(frozen=True)
class ModelSpec:
    """One model's simulated behaviour.

    Attributes:
        name: the model id as requested.
        family: family key; caches are keyed per family+name.
        context_length: window in tokens (prompt + ``max_tokens`` must fit).
        max_output_tokens: largest ``max_tokens`` accepted (tokens).
        cache_rules: ``"anthropic"`` or ``"openai"``.
        min_cacheable_tokens: Anthropic: minimum prefix a breakpoint must cover to be
            written; OpenAI: first cacheable length (1024).
        cache_step_tokens: OpenAI: cached lengths grow in steps of this many tokens (128).
        openai_retention_seconds: OpenAI: idle lifetime of an automatic cache entry (s).
        price_input / price_output: USD per million tokens (Anthropic multipliers apply:
            5m write 1.25x, 1h write 2x, read 0.1x; OpenAI read ``openai_cached_multiplier``).
        openai_cached_multiplier: OpenAI: price multiplier of cached input tokens.
    """

    name: str
    family: str
    context_length: int
    max_output_tokens: int
    cache_rules: str
    min_cacheable_tokens: int
    price_input: float
    price_output: float
    cache_step_tokens: int = 128
    openai_retention_seconds: float = 600.0
    openai_cached_multiplier: float = 0.5

    @property
    def anthropic_rules(self) -> bool:
        """True when explicit ``cache_control`` breakpoints (P1–P3) govern caching."""
        return self.cache_rules == ANTHROPIC


_CLAUDE_DEFAULTS = dict(context_length=200_000, max_output_tokens=64_000, cache_rules=ANTHROPIC)

#: (pattern, family, fields): first match wins, tried after exact names.
_FAMILIES: list[tuple[str, str, dict]] = [
    (
        r"claude-(opus-4[-.]?[5-7]|haiku-4[-.]?5)",
        "claude-4096",
        dict(_CLAUDE_DEFAULTS, min_cacheable_tokens=4096, price_input=5.0, price_output=25.0),
    ),
    (
        r"claude-(3[-.]5-haiku|3-haiku|haiku-3)",
        "claude-haiku-3",
        dict(
            _CLAUDE_DEFAULTS,
            max_output_tokens=8192,
            min_cacheable_tokens=2048,
            price_input=0.8,
            price_output=4.0,
        ),
    ),
    (
        r"claude-sonnet-4[-.]6",
        "claude-sonnet-4.6",
        dict(_CLAUDE_DEFAULTS, min_cacheable_tokens=2048, price_input=3.0, price_output=15.0),
    ),
    (
        r"claude-opus",
        "claude-opus",
        dict(
            _CLAUDE_DEFAULTS,
            max_output_tokens=32_000,
            min_cacheable_tokens=1024,
            price_input=15.0,
            price_output=75.0,
        ),
    ),
    (
        r"claude",
        "claude-1024",
        dict(_CLAUDE_DEFAULTS, min_cacheable_tokens=1024, price_input=3.0, price_output=15.0),
    ),
    (
        r"gpt-4\.1",
        "gpt-4.1",
        dict(
            context_length=1_047_576,
            max_output_tokens=32_768,
            cache_rules=OPENAI,
            min_cacheable_tokens=1024,
            price_input=2.0,
            price_output=8.0,
            openai_cached_multiplier=0.25,
        ),
    ),
    (
        r"gpt-5",
        "gpt-5",
        dict(
            context_length=400_000,
            max_output_tokens=128_000,
            cache_rules=OPENAI,
            min_cacheable_tokens=1024,
            price_input=1.25,
            price_output=10.0,
            openai_cached_multiplier=0.1,
        ),
    ),
    (
        r"gpt-4o|gpt-4|o1|o3|o4",
        "gpt-4o",
        dict(
            context_length=128_000,
            max_output_tokens=16_384,
            cache_rules=OPENAI,
            min_cacheable_tokens=1024,
            price_input=2.5,
            price_output=10.0,
            openai_cached_multiplier=0.5,
        ),
    ),
]

#: Names listed by ``GET /v1/models``.
LISTED_MODELS = (
    DEFAULT_MODEL,
    "anthropic/claude-sonnet-4.5",
    "anthropic/claude-opus-4.5",
    "anthropic/claude-haiku-4.5",
    "anthropic/claude-3.5-haiku",
    "claude-sonnet-4-20250514",
    "claude-sonnet-4-5",
    "claude-opus-4-5",
    "claude-haiku-4-5",
    "claude-3-5-haiku-20241022",
    "gpt-4o",
    "gpt-4.1",
    "gpt-5",
    "openai/gpt-4o",
)

_GENERIC = dict(
    context_length=128_000,
    max_output_tokens=16_384,
    cache_rules=OPENAI,
    min_cacheable_tokens=1024,
    price_input=1.0,
    price_output=4.0,
)


#: Largest window, output limit or cache length a model may be given (tokens).
MAX_TOKENS = 1_000_000_000
#: Largest price (USD per million tokens).
MAX_PRICE = 1_000_000.0


def check_field(name: str, value: Any) -> Any:
    """``value`` if it is acceptable for :class:`ModelSpec` field ``name`` (normalised).

    Windows and token counts are integers (``context_length``, ``max_output_tokens`` and
    ``cache_step_tokens`` >= 1, ``min_cacheable_tokens`` >= 0, all <= 10**9); prices are
    finite USD per million tokens 0..10**6; ``openai_retention_seconds`` finite seconds
    0..10**9; ``openai_cached_multiplier`` 0..1; ``cache_rules`` ``"anthropic"`` or ``"openai"``.

    Raises:
        ValueError (:class:`~simulator.provider.inputs.InputError`): unknown field, wrong
            type, NaN/infinite or out of range; the message says what is accepted.
    """
    if name in ("context_length", "max_output_tokens", "cache_step_tokens"):
        return check_int(value, name, 1, MAX_TOKENS)
    if name == "min_cacheable_tokens":
        return check_int(value, name, 0, MAX_TOKENS)
    if name in ("price_input", "price_output"):
        return check_number(value, name, 0.0, MAX_PRICE)
    if name == "openai_retention_seconds":
        return check_number(value, name, 0.0, 1e9)
    if name == "openai_cached_multiplier":
        return check_number(value, name, 0.0, 1.0)
    if name == "cache_rules":
        return check_choice(value, name, (ANTHROPIC, OPENAI))
    if name in ("name", "family"):
        return check_str(value, name, max_len=256)
    raise ValueError(
        f"{name}: unknown ModelSpec field; accepted: "
        + ", ".join(sorted(ModelSpec.__dataclass_fields__))
    )


def families() -> list[str]:
    """Family keys :meth:`ModelTable.override` accepts (the built-in families and ``generic``)."""
    return sorted({f for _, f, _ in _FAMILIES} | {"generic"})


class ModelTable:
    """Resolves model names to :class:`ModelSpec`; per-provider, overridable.

    Unknown names get the generic OpenAI-rules spec (128k window) rather than an
    error, so any client model id works; :meth:`override` pins exact values.
    """

    def __init__(self) -> None:
        self._exact: dict[str, ModelSpec] = {}
        self._family_overrides: dict[str, dict] = {}
        self._memo: dict[str, ModelSpec] = {}

    def resolve(self, name: str) -> ModelSpec:
        """The spec for model ``name`` (exact override, then family pattern, then generic)."""
        spec = self._memo.get(name)
        if spec is not None:
            return spec
        spec = self._exact.get(name)
        if spec is None:
            low = name.lower()
            for pattern, family, fields in _FAMILIES:
                if re.search(pattern, low):
                    spec = ModelSpec(
                        name=name,
                        family=family,
                        **dict(fields, **self._family_overrides.get(family, {})),
                    )
                    break
            else:
                spec = ModelSpec(
                    name=name,
                    family="generic",
                    **dict(_GENERIC, **self._family_overrides.get("generic", {})),
                )
        self._memo[name] = spec
        return spec

    def override(self, name: str | None = None, *, family: str | None = None, **fields) -> None:
        """Change fields (e.g. ``min_cacheable_tokens=2048``) of one model ``name`` or a ``family``.

        Raises:
            ValueError: neither or both of ``name`` / ``family`` given, an unknown family or
                field, or a value :func:`check_field` rejects (the table is then unchanged).
        """
        if (name is None) == (family is None):
            raise ValueError("override() needs exactly one of name=... or family=...")
        unknown = set(fields) - set(ModelSpec.__dataclass_fields__) - {"name", "family"}
        if unknown:
            raise ValueError(f"override(): unknown ModelSpec fields {sorted(unknown)}")
        fields = {k: check_field(k, v) for k, v in fields.items()}
        if name is not None:
            check_field("name", name)
        elif family not in families():
            raise ValueError(f"family: got {family!r}; accepted: one of {', '.join(families())}")
        if name is not None:
            self._exact[name] = replace(self.resolve(name), **fields)
        else:
            self._family_overrides.setdefault(family, {}).update(fields)
        self._memo.clear()

    def snapshot(self) -> tuple[dict[str, ModelSpec], dict[str, dict]]:
        """The overrides made so far (for :meth:`restore`)."""
        return dict(self._exact), copy.deepcopy(self._family_overrides)

    def restore(self, snapshot: tuple[dict[str, ModelSpec], dict[str, dict]]) -> None:
        """Return to the overrides of ``snapshot`` (from :meth:`snapshot`), dropping later ones."""
        self._exact = dict(snapshot[0])
        self._family_overrides = copy.deepcopy(snapshot[1])
        self._memo.clear()

    def listing(self) -> list[ModelSpec]:
        """Specs of :data:`LISTED_MODELS` plus exact overrides, for ``GET /v1/models``."""
        names = list(LISTED_MODELS) + [n for n in self._exact if n not in LISTED_MODELS]
        return [self.resolve(n) for n in names]
