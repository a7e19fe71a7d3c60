"""Point hermes-agent's real auxiliary client at the kit's LLM, by configuration only.

hermes-agent 0.19.0 resolves the endpoint of ``call_llm(task=T)`` from
``$HERMES_HOME/config.yaml`` (``agent/auxiliary_client.py``:
``_resolve_task_provider_model`` reading ``auxiliary.<T>`` through
``hermes_cli.config.load_config``): with ``base_url`` and ``api_key`` set it uses the
``custom`` provider, an OpenAI SDK client on that URL, and ``model`` as the model id.
``auxiliary.<T>.timeout`` is the request deadline (seconds; for ``compression`` floored at
300 s) and ``auxiliary.transient_retries`` the same-endpoint retries on 5xx / 408 /
connection errors (default 2). 0.19.0 reads no environment variable for these: the
``AUXILIARY_<TASK>_*`` variables are only written by the CLI / gateway from this config.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from simulator.llm.engine_llm import DEFAULT_API_KEY, DEFAULT_LLM_MODEL
from simulator.provider.http import ensure_loopback

#: Hosts the kit's Hermes processes may reach without a proxy.
LOOPBACK_NO_PROXY = "127.0.0.1,localhost,::1"


def configure_hermes_home(
    home: str | Path,
    base_url: str,
    *,
    model: str = DEFAULT_LLM_MODEL,
    api_key: str = DEFAULT_API_KEY,
    tasks: Iterable[str] = ("compression",),
    timeout: float | None = None,
    transient_retries: int | None = None,
) -> dict[str, str]:
    """Write ``auxiliary.<task>`` blocks into ``home/config.yaml``; return the env vars to apply.

    Keys already in the file are kept (other sections, other tasks); the written file is
    sorted YAML, so the same arguments give the same bytes.

    Args:
        home: the ``HERMES_HOME`` directory (created if missing; one per engine).
        base_url: the OpenAI-compatible base URL on loopback (``http://127.0.0.1:PORT/v1``).
        model: ``auxiliary.<task>.model``.
        api_key: ``auxiliary.<task>.api_key`` (also the server's cache namespace).
        tasks: auxiliary task names to point at ``base_url``.
        timeout: ``auxiliary.<task>.timeout`` in seconds (None: Hermes' default).
        transient_retries: ``auxiliary.transient_retries`` (None: Hermes' default, 2).

    Returns:
        ``{"HERMES_HOME": ..., "NO_PROXY": ..., "no_proxy": ...}`` (loopback bypasses any
        proxy): apply with ``os.environ.update`` or pass to a subprocess.

    Raises:
        simulator.provider.http.NonLoopbackRefused: ``base_url`` is not on loopback.
        ValueError: ``base_url`` has no http(s) scheme or host, or config.yaml is not a mapping.
    """
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"base_url {base_url!r} must be http(s)://HOST:PORT/...")
    ensure_loopback(parts.hostname)
    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.yaml"
    config = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None
    config = {} if config is None else config
    if not isinstance(config, dict):
        kind = type(config).__name__
        article = "an" if kind[:1].lower() in "aeiou" else "a"
        raise ValueError(f"{path} holds {article} {kind}, not a mapping")
    aux = config.setdefault("auxiliary", {})
    for task in tasks:
        block = {"provider": "custom", "base_url": base_url, "api_key": api_key, "model": model}
        if timeout is not None:
            block["timeout"] = float(timeout)
        aux[task] = {**(aux.get(task) or {}), **block}
    if transient_retries is not None:
        aux["transient_retries"] = int(transient_retries)
    path.write_text(yaml.safe_dump(config, sort_keys=True), encoding="utf-8")
    return {"HERMES_HOME": str(home), "NO_PROXY": LOOPBACK_NO_PROXY, "no_proxy": LOOPBACK_NO_PROXY}


def launch_hermes_home(home: str | Path) -> bool:
    """Lay ``home`` out the way every Hermes launch does before an agent runs.

    Hermes' CLI and gateway call ``hermes_cli.config.ensure_hermes_home()`` on every config
    load (its folders ``sessions/``, ``logs/``, ``skills/``, ... and the default ``SOUL.md``), so
    an engine in a real agent always finds them. A kit home laid out the same way keeps that
    first-launch seeding out of what TS2 sees the engine write. Uses Hermes' own function with
    ``HERMES_HOME`` pointed at ``home`` for the call (the variable is restored after).

    Hermes 0.22 also keeps a last-known-good copy of ``config.yaml`` from its first successful
    config load (``backups/config/config.yaml.good.<timestamp>``; a later load with the same
    bytes writes none), so a launched 0.22's home always has one: when that version's
    ``hermes_cli.config_backups.backup_config`` exists, it makes the copy of the home's
    ``config.yaml`` (call this after writing it, as :func:`configure_hermes_home` does).

    Returns:
        True when hermes-agent laid the home out; False when hermes-agent is not importable or
        its function refused (OSError, RuntimeError): the home is then left as it was.
    """
    try:
        from hermes_cli.config import ensure_hermes_home
    except ImportError:
        return False
    saved = os.environ.get("HERMES_HOME")
    os.environ["HERMES_HOME"] = str(home)
    try:
        ensure_hermes_home()
        _first_config_load_backup(Path(home) / "config.yaml")
        return True
    except (OSError, RuntimeError):
        return False
    finally:
        if saved is None:
            os.environ.pop("HERMES_HOME", None)
        else:
            os.environ["HERMES_HOME"] = saved


def _first_config_load_backup(config_path: Path) -> None:
    """The last-known-good backup Hermes 0.22's first config load writes (nothing on hosts
    without ``hermes_cli.config_backups``, e.g. 0.19.0, or when ``config_path`` is missing)."""
    try:
        from hermes_cli.config_backups import backup_config
    except ImportError:
        return
    if config_path.is_file():
        backup_config(config_path, "good")
