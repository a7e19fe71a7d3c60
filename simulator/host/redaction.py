"""What Hermes 0.22 does to provider memory text before an engine sees it (``memory_context``).

The kit's own code for two facts of the real host (docs/host.md, "memory_context"):

- :func:`redact_sensitive_text` masks credential-shaped substrings the way Hermes'
  ``redact_sensitive_text(..., force=True, redact_url_credentials=True)`` does at an egress
  boundary: a vendor-prefixed token keeps its first 6 and last 4 characters around ``...``
  (``***`` when shorter than 18 characters); a secret-named assignment (``OPENAI_API_KEY=...``,
  ``"api_key": "..."``, ``password: ...``) keeps its name and masks its value; an
  ``Authorization:`` header keeps its scheme; a PEM private key becomes
  ``[REDACTED PRIVATE KEY]``; a URL loses its userinfo (``//***:***@``) and the values of
  credential-named query parameters (``token=***``). It is a model of the real redactor's main
  shapes, not a copy of its every rule.
- :func:`elide_middle` keeps a head and a tail and puts Hermes' non-imitable elision marker
  (:func:`elision_marker`) in between, with the omitted and total character counts.

Units are characters throughout.
"""

from __future__ import annotations

import re

#: Prefixes of vendor-issued credentials (each followed by at least 10 token characters).
_VENDOR_PREFIXES = (
    "sk-",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "pk-lf-",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xoxr-",
    "xoxs-",
    "xapp-",
    "hf_",
    "r8_",
    "npm_",
    "pypi-",
    "gsk_",
    "tvly-",
    "pplx-",
    "fal_",
    "fc-",
)
_VENDOR_RE = re.compile(
    r"(?<![A-Za-z0-9_-])((?:"
    + "|".join(re.escape(p) for p in _VENDOR_PREFIXES)
    + r")[A-Za-z0-9_.\-]{10,}|AIza[A-Za-z0-9_-]{30,}|AKIA[A-Z0-9]{16})(?![A-Za-z0-9_-])"
)
_JWT_RE = re.compile(r"eyJ[A-Za-z0-9_-]{10,}(?:\.[A-Za-z0-9_=-]{4,}){0,2}")
_SECRET_WORDS = r"(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|PW|CREDENTIAL|AUTH)"
_ENV_ASSIGN_RE = re.compile(
    rf"\b([A-Z0-9_]{{0,50}}{_SECRET_WORDS}[A-Z0-9_]{{0,50}})\s*=\s*(['\"]?)([^\s'\"]+)\2"
)
_JSON_FIELD_RE = re.compile(
    r'("(?:api_?key|token|secret|password|access_token|refresh_token|auth_token|bearer)")'
    r'\s*:\s*"([^"]+)"',
    re.IGNORECASE,
)
_YAML_FIELD_RE = re.compile(
    r"(^[ \t]*[A-Za-z0-9_.\-]*(?:api[_.\-]?key|token|secret|passwd|password|credential)"
    r"[A-Za-z0-9_.\-]*)(:[ \t]*)(?!['\"])([^\s&]+)",
    re.IGNORECASE | re.MULTILINE,
)
_AUTH_HEADER_RE = re.compile(
    r"((?:Proxy-)?Authorization:\s*)([A-Za-z][\w.+-]*\s+)?([^\s\"']+)", re.IGNORECASE
)
_PRIVATE_KEY_RE = re.compile(
    r"-----BEGIN[A-Z ]*PRIVATE KEY-----[\s\S]*?-----END[A-Z ]*PRIVATE KEY-----"
)
_URL_USERINFO_RE = re.compile(r"//[^/\s?#@]+@")
_URL_PARAM_RE = re.compile(r"([?#&;])([A-Za-z0-9_.~+%\-]+)=([^#&;\s\"'<>]*)")
#: Query parameter names whose values are credentials (compared case-insensitively, ``-`` = ``_``).
SENSITIVE_QUERY_PARAMS = frozenset(
    {
        "access_token",
        "refresh_token",
        "id_token",
        "token",
        "api_key",
        "apikey",
        "client_secret",
        "password",
        "auth",
        "jwt",
        "session",
        "secret",
        "key",
        "code",
        "signature",
        "sig",
        "x_amz_signature",
        "x_goog_signature",
    }
)

#: The elision marker's fixed text around the two counts (omitted, total; thousands commas).
ELISION_MARKER_FORMAT = (
    "⟪HERMES-CONTEXT-COMPRESSION: {omitted:,} of {total:,} chars omitted here by "
    "Hermes's context compressor.⟫"
)


def mask_token(token: str) -> str:
    """A credential as Hermes logs it: ``sk-abc...wxyz`` (first 6, last 4 characters), or
    ``***`` when it is shorter than 18 characters."""
    if len(token) < 18:
        return "***"
    return f"{token[:6]}...{token[-4:]}"


def redact_sensitive_text(
    text: str, *, force: bool = False, redact_url_credentials: bool = False
) -> str:
    """``text`` with credential-shaped substrings masked (module doc lists the shapes).

    ``force`` is accepted for the real signature (the kit always redacts);
    ``redact_url_credentials`` also masks URL userinfo and credential-named query values.
    """
    del force  # the kit has no opt-out to override
    if not text:
        return text
    out = _VENDOR_RE.sub(lambda m: mask_token(m.group(1)), text)
    out = _ENV_ASSIGN_RE.sub(
        lambda m: f"{m.group(1)}={m.group(2)}{mask_token(m.group(3))}{m.group(2)}", out
    )
    out = _JSON_FIELD_RE.sub(lambda m: f'{m.group(1)}: "{mask_token(m.group(2))}"', out)
    if "://" not in out:
        out = _YAML_FIELD_RE.sub(lambda m: m.group(1) + m.group(2) + mask_token(m.group(3)), out)
    out = _AUTH_HEADER_RE.sub(
        lambda m: m.group(1) + (m.group(2) or "") + mask_token(m.group(3)), out
    )
    out = _PRIVATE_KEY_RE.sub("[REDACTED PRIVATE KEY]", out)
    out = _JWT_RE.sub(lambda m: mask_token(m.group(0)), out)
    if redact_url_credentials:
        out = _URL_PARAM_RE.sub(
            lambda m: (
                f"{m.group(1)}{m.group(2)}=***"
                if m.group(2).lower().replace("-", "_") in SENSITIVE_QUERY_PARAMS
                else m.group(0)
            ),
            out,
        )
        out = _URL_USERINFO_RE.sub("//***:***@", out)
    return out


def elision_marker(omitted: int, total: int) -> str:
    """Hermes' elision marker for ``omitted`` of ``total`` characters."""
    return ELISION_MARKER_FORMAT.format(omitted=omitted, total=total)


def elide_middle(text: str, head: int, tail: int) -> str:
    """``text`` unchanged when it has at most ``head + tail`` characters; else its first
    ``head`` and last ``tail`` characters with :func:`elision_marker` between them."""
    if len(text) <= head + tail:
        return text
    return (
        text[:head] + elision_marker(len(text) - head - tail, len(text)) + text[len(text) - tail :]
    )
