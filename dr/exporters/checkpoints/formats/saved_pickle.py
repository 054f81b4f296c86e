"""The key structure of a `torch.save` pickle (`data.pkl` in its zip), read without torch.

Why: the resume check needs to know which top-level entries a `torch.save` checkpoint holds
(model, optimizer, lr_scheduler, step ...) and the plain values of a few of them (a git SHA,
an image digest). Loading it with torch would allocate every tensor and, worse, run any
callable the pickle names. Here every global the pickle names becomes an inert stand-in that
only records its name and arguments; tensors arrive as `Opaque` objects named after their
rebuild function, storages (persistent ids) as plain tuples. Nothing is imported or called.

DCP stores each non-tensor value of a state dict the same way (a small torch.save archive at
an offset of a `.distcp` file), so value() reads those too.
"""

from __future__ import annotations

import io
import pickle
import zipfile
from typing import Any

#: a data.pkl larger than this is not read (tensors live in separate records: a pickle this
#: large is not a torch.save state dict's key structure)
MAX_PICKLE_BYTES = 64 * 1024 * 1024
_DICTS = {("collections", "OrderedDict"), ("builtins", "dict")}


class SavedPickleError(ValueError):
    """data.pkl missing, too large, or not a pickle."""


class Opaque:
    """Whatever a global built: a tensor, a parameter, a dtype, an optimizer's class ..."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = args

    def __setstate__(self, state: Any) -> None:
        self.state = state  # kept, never interpreted

    @classmethod
    def name(cls) -> str:
        return getattr(cls, "global_name", "?")


class SavedDict(dict):
    """An OrderedDict (a state_dict): keys kept, the `_metadata` attribute BUILD sets ignored."""

    def __setstate__(self, state: Any) -> None:
        pass


_TYPES: dict[tuple[str, str], type] = {}


def _stand_in(module: str, name: str) -> type:
    """One inert class per global name (NEWOBJ needs a class, REDUCE a callable)."""
    key = (module, name)
    if key not in _TYPES:
        _TYPES[key] = type(f"Opaque_{name}", (Opaque,), {"global_name": f"{module}.{name}"})
    return _TYPES[key]


class _InertUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _DICTS:
            return SavedDict  # so the state dict's keys stay readable
        return _stand_in(module, name)

    def persistent_load(self, pid: Any) -> Any:
        return ("storage", pid)  # torch's storages: never loaded


def load_inert(data: bytes) -> Any:
    if len(data) > MAX_PICKLE_BYTES:
        raise SavedPickleError(f"data.pkl is {len(data)} bytes, over the {MAX_PICKLE_BYTES} limit")
    try:
        return _InertUnpickler(io.BytesIO(data)).load()
    except Exception as exc:  # truncated or garbled pickles raise many types
        raise SavedPickleError(f"data.pkl is not a readable pickle: {type(exc).__name__}: {exc}") from None


def data_pickle(archive: Any) -> bytes:
    """The bytes of data.pkl in a torch.save zip (a path, a file object or bytes)."""
    if isinstance(archive, bytes):
        archive = io.BytesIO(archive)
    try:
        with zipfile.ZipFile(archive) as zf:
            names = [i for i in zf.infolist() if i.filename == "data.pkl" or i.filename.endswith("/data.pkl")]
            if not names:
                raise SavedPickleError("the zip holds no data.pkl: not a torch.save archive")
            if names[0].file_size > MAX_PICKLE_BYTES:
                raise SavedPickleError(f"data.pkl is {names[0].file_size} bytes, over the {MAX_PICKLE_BYTES} limit")
            return zf.read(names[0])
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise SavedPickleError(f"not a readable torch.save zip: {exc}") from None


def leaves(obj: Any, path: tuple[str, ...] = (), depth: int = 8) -> list[tuple[tuple[str, ...], Any]]:
    """(path, leaf) for every non-dict value under nested dicts, keys as strings; lists and
    tuples are leaves (an optimizer's param_groups), so are tensors."""
    if isinstance(obj, dict) and depth > 0 and obj:
        out = []
        for key, value in obj.items():
            out += leaves(value, path + (str(key),), depth - 1)
        return out
    return [(path, obj)]


def is_tensor(value: Any) -> bool:
    return isinstance(value, Opaque) and "rebuild" in type(value).name()


def value(data: bytes) -> Any:
    """The Python value a small torch.save archive holds (DCP bytes entries)."""
    return load_inert(data_pickle(data))
