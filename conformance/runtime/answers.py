"""The door the parent loads a child's answer through: the kit's own classes and builtin data
types, never engine code (:func:`kit_loads`)."""

from __future__ import annotations

import pickle
from typing import Any

# -- the door: what a child hands back is data, never code -----------------------------------
# The child runs the engine, so the engine could write its own bytes to the answer pipe. A
# plain ``pickle.loads`` would run whatever those bytes name (``os.system``, the engine's own
# module, a patch of the verdict) in the process that writes the verdict. The parent therefore
# loads only classes: the kit's own (``conformance.*``, ``simulator.*``) and the builtin
# containers, scalars and exceptions; a function, or a class of any other module (an engine's
# own type inside a returned value, say), is refused, and the case says so.

_SAFE_BUILTINS = frozenset(
    {
        "bool",
        "bytearray",
        "bytes",
        "complex",
        "dict",
        "float",
        "frozenset",
        "int",
        "list",
        "object",
        "range",
        "set",
        "slice",
        "str",
        "tuple",
        "type",
    }
)


class _KitUnpickler(pickle.Unpickler):
    """Loads only the kit's own classes and the builtin data types and exceptions."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "builtins" and (
            name in _SAFE_BUILTINS or name.endswith(("Error", "Exception", "Warning"))
        ):
            return super().find_class(module, name)
        if module.split(".")[0] in ("conformance", "simulator", "collections", "hypothesis"):
            found = super().find_class(module, name)
            if isinstance(found, type):
                return found
        raise pickle.UnpicklingError(
            f"the case's child sent {module}.{name}, which is not a class of the kit or a "
            "builtin data type (the kit's process loads no engine code)"
        )


class RefusedAnswer(RuntimeError):
    """What a child handed back was refused (:class:`_KitUnpickler`) or did not load."""


def kit_loads(payload: bytes) -> Any:
    """``payload`` unpickled with :class:`_KitUnpickler`.

    Raises:
        RefusedAnswer: a refused or broken payload (saying why).
    """
    import io

    try:
        return _KitUnpickler(io.BytesIO(payload)).load()
    except Exception as exc:  # noqa: BLE001 - whatever the bytes were, they are refused
        text = f"{type(exc).__name__}: {exc}"[:300]
        raise RefusedAnswer(f"the case's answer was refused: {text}") from None
