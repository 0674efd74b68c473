"""Code object ids from file names (rocprof-att, att_tool.py, generate_code.py).

``..._code_object_id_<n>_...`` wins; otherwise the integer after the last ``_``
(``kernel_3.hsaco`` -> 3). One file without an id may take id 0.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from .codegen import CodeObject

_TAGGED_ID = re.compile(r"(?:^|_)code_object_id_(\d+)(?:_|$)", re.IGNORECASE)
_TRAILING_ID = re.compile(r"_(\d+)$")


def code_object_id_from_name(path: Path) -> int | None:
    stem = path.stem
    match = _TAGGED_ID.search(stem) or _TRAILING_ID.search(stem)
    return int(match.group(1)) if match else None


def code_objects_from_paths(paths: Iterable[str | Path]) -> list[CodeObject]:
    paths = [Path(p) for p in paths]
    ids = {path: code_object_id_from_name(path) for path in paths}
    untagged = [path for path, code_object_id in ids.items() if code_object_id is None]
    if len(untagged) > 1:
        names = ", ".join(str(p) for p in untagged)
        raise ValueError(f"Cannot infer code object IDs for multiple unnamed inputs: {names}")
    if untagged:
        if 0 in ids.values():
            raise ValueError(f"Cannot assign code object id 0 to {untagged[0]}: another input already uses id 0.")
        ids[untagged[0]] = 0
    return [CodeObject(path, ids[path]) for path in paths]
