"""Git objects of a tree of files and of a revision's commit, with dulwich.

Everything here is a function of its inputs: the same files give the same tree id, the same
revision the same commit id, so every clone of a space agrees on its history.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from dulwich.objects import Blob, Commit, ObjectID, ShaFile, Tree

FILE_MODE = 0o100644
DIR_MODE = 0o040000

Put = Callable[[ShaFile], None]


def blob(data: bytes) -> Blob:
    return Blob.from_string(data)


def tree(files: Mapping[str, bytes | Blob], put: Put) -> bytes:
    """The id of the tree holding `files` (path -> bytes or a blob made already); every
    object of it handed to `put`."""
    folders: dict[str, dict[bytes, tuple[int, ObjectID]]] = {"": {}}
    for path in sorted(files):
        data = files[path]
        made = data if isinstance(data, Blob) else blob(data)
        put(made)
        parts = path.split("/")
        for depth in range(1, len(parts)):
            folders.setdefault("/".join(parts[:depth]), {})
        folder = "/".join(parts[:-1])
        folders[folder][parts[-1].encode()] = (FILE_MODE, made.id)
    # Deepest folders first, so each parent finds its children's ids.
    for folder in sorted((f for f in folders if f), key=lambda f: -f.count("/")):
        obj = _tree(folders[folder])
        put(obj)
        parent, _, name = folder.rpartition("/")
        folders[parent][name.encode()] = (DIR_MODE, obj.id)
    root = _tree(folders[""])
    put(root)
    return root.id


def _tree(entries: dict[bytes, tuple[int, ObjectID]]) -> Tree:
    obj = Tree()
    for name, (mode, sha) in entries.items():
        obj.add(name, mode, sha)
    return obj


@dataclass(frozen=True, slots=True)
class Signature:
    """Who and when: `identity` as git writes it (`Name <email>`), `when` in seconds."""

    identity: bytes
    when: int
    offset: int = 0


def commit(
    tree_id: bytes,
    parents: Sequence[bytes],
    author: Signature,
    committer: Signature,
    message: bytes,
) -> Commit:
    obj = Commit()
    obj.tree = tree_id
    obj.parents = [ObjectID(p) for p in parents]
    obj.author = author.identity
    obj.author_time = author.when
    obj.author_timezone = author.offset
    obj.committer = committer.identity
    obj.commit_time = committer.when
    obj.commit_timezone = committer.offset
    obj.message = message
    return obj


def files_of(
    lookup: Callable[[bytes], ShaFile], tree_id: bytes, ids: dict[str, bytes] | None = None
) -> dict[str, bytes]:
    """Every file of a tree, by path (a pushed tree: submodules and symlinks refused); each
    file's blob id put in `ids` when given."""
    out: dict[str, bytes] = {}
    stack: list[tuple[str, bytes]] = [("", tree_id)]
    while stack:
        prefix, sha = stack.pop()
        obj = lookup(sha)
        if not isinstance(obj, Tree):
            raise ValueError(f"{prefix or '/'}: not a tree")
        for entry in obj.items():
            name = entry.path.decode("utf-8", "replace")
            path = f"{prefix}{name}"
            if entry.mode == DIR_MODE:
                stack.append((f"{path}/", entry.sha))
            elif entry.mode in (FILE_MODE, 0o100755):
                item = lookup(entry.sha)
                if not isinstance(item, Blob):
                    raise ValueError(f"{path}: not a file")
                out[path] = item.as_raw_string()
                if ids is not None:
                    ids[path] = entry.sha
            else:
                raise ValueError(f"{path}: symbolic links and submodules are not synced")
    return out
