"""A restricted unpickler for PyTorch DCP `.metadata` files: it can only build inert objects.

Why: `pickle.load` on a file from a bucket or a shared volume runs whatever callable the file
names (os.system, eval, ...). DCP's index is a pickle, and a backup tool reads files written
by anyone with write access to the checkpoint directory. So `find_class` resolves ONLY the
globals DCP writes, each to a stand-in defined here: plain data classes and constructors that
store their arguments. Nothing resolves to torch or to a callable with side effects; any other
global is refused before anything runs, and so are persistent ids.

What torch 2.13 pickles (its metadata.py and filesystem.py, checked on real files):
  Metadata(state_dict_metadata: {fqn: TensorStorageMetadata | BytesStorageMetadata},
           planner_data, storage_data: {MetadataIndex: _StorageInfo}, storage_meta, version)
  TensorStorageMetadata(properties: TensorProperties, size: torch.Size,
                        chunks: [ChunkStorageMetadata(offsets: Size, sizes: Size)])
  TensorProperties state is a tuple (dtype, layout, requires_grad, _MEM_FORMAT_ENCODING,
                        pin_memory); dtypes pickle as the global `torch.<name>`, layouts as
                        `torch.serialization._get_layout("torch.strided")`.
  MetadataIndex(fqn, offset: Size | None, index); _StorageInfo(relative_path, offset, length,
                        transform_descriptors?); StorageMeta(checkpoint_id: a pathlib path,
                        save_id, load_id, modules).
Objects arrive as NEWOBJ(cls) + BUILD(state): BUILD updates __dict__ unless the class has
__setstate__, which is why the stand-ins are ordinary (non-slots) data classes.
"""

from __future__ import annotations

import enum
import io
import pathlib
import pickle
import re
from dataclasses import dataclass, field
from typing import Any

_DCP_MD = "torch.distributed.checkpoint.metadata"
_DCP_FS = "torch.distributed.checkpoint.filesystem"
# Accepted as dtype names (`torch.float32`, `torch.float8_e4m3fn`, `torch.quint4x2`, ...).
# A pattern rather than 2.13's list, so a newer dtype does not make a good checkpoint look
# broken; safe either way because the name only ever becomes an inert DType stand-in.
_DTYPE_NAME = re.compile(r"^(bool|(u?int|b?float|complex|bits|qu?int)[0-9][0-9a-z_]*)$")


class DcpMetadataError(ValueError):
    """The `.metadata` file is not a DCP index we can read (truncated, foreign, malformed)."""


class UnsafePickleError(DcpMetadataError):
    """The pickle names something outside the DCP allow-list; nothing was executed."""


class Size(tuple):
    """torch.Size: pickled as REDUCE(torch.Size, (tuple,))."""


@dataclass(frozen=True)
class DType:
    name: str


@dataclass(frozen=True)
class Layout:
    name: str


class MemFormat(enum.Enum):
    """torch's _MEM_FORMAT_ENCODING (memory formats themselves cannot be pickled)."""

    TORCH_CONTIGUOUS_FORMAT = 0
    TORCH_CHANNELS_LAST = 1
    TORCH_PRESERVE_FORMAT = 2


@dataclass
class TensorProperties:
    dtype: Any = None
    layout: Any = None
    requires_grad: bool = False
    memory_format: Any = None
    pin_memory: bool = False

    def __setstate__(self, state: Any) -> None:
        # DCP's __getstate__ writes a 5-tuple; a plain dict is accepted for older writers.
        if isinstance(state, tuple) and len(state) == 5:
            (self.dtype, self.layout, self.requires_grad, self.memory_format, self.pin_memory) = state
        elif isinstance(state, dict):
            self.__dict__.update(state)
        else:
            raise DcpMetadataError(f"unexpected TensorProperties state {type(state).__name__}")


@dataclass
class ChunkStorageMetadata:
    offsets: Any = None
    sizes: Any = None


@dataclass
class TensorStorageMetadata:
    properties: Any = None
    size: Any = None
    chunks: Any = None


@dataclass
class BytesStorageMetadata:
    pass


@dataclass
class StorageMeta:
    checkpoint_id: Any = None
    save_id: Any = None
    load_id: Any = None
    modules: Any = None


@dataclass
class Metadata:
    state_dict_metadata: Any = None
    planner_data: Any = None
    storage_data: Any = None
    storage_meta: Any = None
    version: Any = None


@dataclass(frozen=True)
class MetadataIndex:
    """Dict key of storage_data; hashed on (fqn, offset) like torch's (index is a hint)."""

    fqn: Any = None
    offset: Any = None
    index: Any = field(default=None, hash=False, compare=False)


@dataclass
class StorageInfo:
    relative_path: Any = None
    offset: Any = None
    length: Any = None
    transform_descriptors: Any = None


def _get_layout(name: Any) -> Layout:
    """Stand-in for torch.serialization._get_layout: only records the name."""
    if not isinstance(name, str) or not name.startswith("torch.") or len(name) > 64:
        raise UnsafePickleError(f"unexpected layout name {name!r}")
    return Layout(name)


_ALLOWED: dict[tuple[str, str], Any] = {
    (_DCP_MD, "Metadata"): Metadata,
    (_DCP_MD, "MetadataIndex"): MetadataIndex,
    (_DCP_MD, "TensorStorageMetadata"): TensorStorageMetadata,
    (_DCP_MD, "BytesStorageMetadata"): BytesStorageMetadata,
    (_DCP_MD, "ChunkStorageMetadata"): ChunkStorageMetadata,
    (_DCP_MD, "TensorProperties"): TensorProperties,
    (_DCP_MD, "StorageMeta"): StorageMeta,
    (_DCP_MD, "_MEM_FORMAT_ENCODING"): MemFormat,
    (_DCP_FS, "_StorageInfo"): StorageInfo,
    ("torch", "Size"): Size,
    ("torch.serialization", "_get_layout"): _get_layout,
    # StorageMeta.checkpoint_id is the writer's path object; pure paths never touch disk.
    # ("pathlib._local" is where Python 3.13's pathlib classes live.)
    **{
        (mod, name): (pathlib.PureWindowsPath if "Windows" in name else pathlib.PurePosixPath)
        for mod in ("pathlib", "pathlib._local")
        for name in ("Path", "PosixPath", "WindowsPath", "PurePath", "PurePosixPath", "PureWindowsPath")
    },
}


class _SafeUnpickler(pickle.Unpickler):
    """Unpickler whose every global lookup goes through the allow-list above."""

    def find_class(self, module: str, name: str) -> Any:
        # Exact matches only: protocol 4 allows dotted names ("os.system" looked up inside an
        # allowed module), which a prefix or getattr-based check would let through.
        if (module, name) in _ALLOWED:
            return _ALLOWED[(module, name)]
        if module == "torch" and _DTYPE_NAME.match(name):
            return DType(name)
        raise UnsafePickleError(
            f"refused to load global {module}.{name}: not part of a DCP index "
            "(the file may be malicious, or not a DCP .metadata)"
        )

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickleError("refused a pickle persistent id: DCP indexes have none")


def safe_load(data: bytes) -> Any:
    """Unpickle `data` into stand-ins; DcpMetadataError (UnsafePickleError when refused)."""
    try:
        return _SafeUnpickler(io.BytesIO(data)).load()
    except DcpMetadataError:
        raise
    except Exception as exc:  # truncated or garbled pickles raise many types
        raise DcpMetadataError(f"not a readable pickle: {type(exc).__name__}: {exc}") from None
