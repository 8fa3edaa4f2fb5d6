"""Applying a batch of content changes (GitBook's ChangeRequestContentChange) to a snapshot.

The batch is applied in order to the snapshot's write buffer; the caller commits it only when
every change succeeded, so an invalid change anywhere leaves nothing behind. Errors name the
change by its index, as `changes[i]`.
"""

from __future__ import annotations

import base64
import binascii
import io
import mimetypes
import posixpath
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import docshelf.document.markdown as md
from docshelf.blobs import blob_key
from docshelf.content.reusable import includes as reusable
from docshelf.content.schemas import (
    Change,
    DeletePage,
    DeleteReusableContent,
    DocumentBody,
    FileInput,
    InsertFiles,
    InsertPage,
    InsertReusableContent,
    RevertPage,
    UpdatePage,
    UpdateReusableContent,
)
from docshelf.content.tree.model import free_slug, page_slug
from docshelf.content.tree.snapshot import PAGE_DEFAULTS, Record, Snapshot
from docshelf.document import blocks, parsing
from docshelf.document.limits import MAX_PAGE_DEPTH, too_deep
from docshelf.document.model import document_to_markdown
from docshelf.kit.errors import BadRequest
from docshelf.kit.ids import new_id

FetchFile = Callable[[str], Awaitable[tuple[bytes, str | None]]]
LoadSnapshot = Callable[[str], Awaitable[Snapshot | None]]

# Fetches happen inside the request's write transaction: bound how long one batch can hold it.
MAX_URL_FILES = 10
_SLUG_FORBIDDEN = re.compile(r"[\s/?#\\]")
_PAGE_LINK = re.compile(r"^/pages/([A-Za-z0-9_-]+)$")
_ID = re.compile(r"[A-Za-z0-9_-]+")
_FILE_LINK = re.compile(r"^/files/([A-Za-z0-9_-]+)$")
_PAGE_FIELDS = ("title", "emoji", "icon", "description", "hidden", "noIndex", "noRobotsIndex")


class ChangeError(BadRequest):
    pass


@dataclass
class Outcome:
    """What a batch did, for GitBook's ChangeRequestContentUpdate answer."""

    created: list[tuple[str | None, str]] = field(default_factory=list)  # (ref, page id)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    files: list[Record] = field(default_factory=list)
    reusables: list[tuple[str | None, str]] = field(default_factory=list)  # (ref, id) created
    # Bytes of the files the batch added, by blob key: stored only once the batch succeeded.
    blobs: dict[str, bytes] = field(default_factory=dict)


def _check_slug(slug: str, where: str) -> str:
    if _SLUG_FORBIDDEN.search(slug) or slug in (".", ".."):
        raise ChangeError(f"{where}: slug {slug!r} must not contain spaces, '/', '?', '#' or '\\'")
    return slug


def _document_keeps(text: str) -> bool:
    """Whether `text` reads the same (as HTML, links and images as written) once it has gone
    through the JSON document and back."""
    if not text:
        return True
    from docshelf.document import html

    def same(target: str) -> str:
        return target

    def rendered(source: str) -> str:
        return html.render(source, links=same, images=same).html

    try:
        again = document_to_markdown(md.to_document(text))
    except BadRequest:
        return False
    return rendered(again) == rendered(text)


class Editor:
    def __init__(
        self,
        snap: Snapshot,
        *,
        now: str,
        fetch_file: FetchFile,
        load_snapshot: LoadSnapshot,
        default_revert_to: str | None,
        strict_includes: bool = True,
    ) -> None:
        self.snap = snap
        # Imports keep an include that names nothing as written; a change batch refuses it.
        self.strict_includes = strict_includes
        self.now = now
        self.fetch_file = fetch_file
        self.load_snapshot = load_snapshot
        self.default_revert_to = default_revert_to
        self.refs: dict[str, tuple[str, str]] = {}  # ref -> ("page" | "file", id)
        self.outcome = Outcome()
        self._rewritten: set[str] = set()  # pages whose markdown this batch set
        self._written_at: dict[str, str] = {}  # page -> the last change that set its markdown
        self.reusable_refs: dict[str, str] = {}  # ref -> reusable content id
        self._reusable_texts: set[str] = set()  # reusable contents whose body this batch set
        # page -> the include targets its body held before this batch first set it
        self._included_before: dict[str, set[str]] = {}
        self._by_slug: dict[str, str] | None = None
        self._fetches = 0

    def _require_new_ref(self, ref: str | None, where: str) -> None:
        """Pages, files and reusable contents of one batch share one namespace of refs."""
        if ref is not None and (ref in self.refs or ref in self.reusable_refs):
            raise ChangeError(f"{where}: ref {ref!r} is used twice in this batch")

    async def apply(self, changes: list[Change]) -> Outcome:
        for index, change in enumerate(changes):
            where = f"changes[{index}]"
            if isinstance(change, InsertPage):
                await self._insert_page(change, where)
            elif isinstance(change, UpdatePage):
                await self._update_page(change, where)
            elif isinstance(change, DeletePage):
                await self._delete_page(change, where)
            elif isinstance(change, RevertPage):
                await self._revert_page(change, where)
            elif isinstance(change, InsertReusableContent):
                await self._insert_reusable(change, where)
            elif isinstance(change, UpdateReusableContent):
                await self._update_reusable(change, where)
            elif isinstance(change, DeleteReusableContent):
                await self._delete_reusable(change, where)
            else:
                await self._insert_files(change, where)
        return await self.finish()

    # Pages

    def _page_id(self, ref: str) -> str:
        kind, target = self.refs.get(ref, ("page", ref))
        return target if kind == "page" else ref

    async def _existing(self, ref: str, where: str) -> Record:
        page = await self.snap.page(self._page_id(ref))
        if page is None:
            raise ChangeError(f"{where}: page {ref!r} does not exist")
        return page

    async def _parent_node(self, into: str | None, where: str) -> Record:
        if into is None:
            return await self.snap.root()
        parent = await self._existing(into, where)
        if parent["type"] == "link":
            raise ChangeError(f"{where}: a link page cannot have child pages")
        return parent

    def _markdown(self, document: DocumentBody, where: str) -> str:
        if document.document is not None:
            raise ChangeError(
                f"{where}: JSON documents are not accepted; send the page body as {{markdown}}"
            )
        text = document.markdown or ""
        problem = md.check(text)
        if problem is not None:
            raise ChangeError(f"{where}: {problem}")
        return text

    def _too_deep(self, where: str, depth: int) -> ChangeError:
        return ChangeError(f"{where}: {too_deep(depth)}")

    async def import_page(
        self,
        *,
        ref: str,
        parent: str | None,
        title: str,
        markdown: str,
        kind: str,
        description: str | None = None,
        href: str | None = None,
    ) -> None:
        """A page from an import: a document, a group at the root, or a link to `href`."""
        change = InsertPage.model_construct(
            operation="insert_page",
            document=DocumentBody.model_construct(markdown=markdown, document=None),
            into=parent,
            ref=ref,
            title=title.strip()[:512] or "Untitled",
            description=description.strip()[:1000] or None if description else None,
            **dict.fromkeys(("at", "slug", "emoji", "icon", "condition"), None),
            **dict.fromkeys(("hidden", "noIndex", "noRobotsIndex"), None),
        )
        await self._insert_page(change, f"page {title!r}", kind=kind, href=href)

    async def import_reusable(self, *, ref: str, title: str, markdown: str) -> None:
        change = InsertReusableContent.model_construct(
            operation="insert_reusable_content",
            title=title.strip()[:512] or "Untitled",
            document=DocumentBody.model_construct(markdown=markdown, document=None),
            ref=ref,
        )
        await self._insert_reusable(change, f"reusable content {title!r}")

    async def import_file(self, *, ref: str, name: str, content_type: str, data: bytes) -> None:
        await self._store_file(name[:256], content_type, data, ref)

    async def finish(self) -> Outcome:
        await self._resolve_links()
        return self.outcome

    async def final_texts(self) -> list[str]:
        """The bodies of the pages this batch wrote, as they will be stored (links rewritten)."""
        texts = []
        for page_id in self._rewritten:
            page = await self.snap.page(page_id)
            if page is not None and page.get("markdown"):
                texts.append(await self.snap.markdown(page))
        for rid in self._reusable_texts:
            rec = await self.snap.reusable(rid)
            if rec is not None and rec.get("markdown"):
                texts.append(await self.snap.markdown(rec))
        return texts

    async def _insert_page(
        self, change: InsertPage, where: str, kind: str = "document", href: str | None = None
    ) -> None:
        text = self._markdown(change.document, where)
        if kind == "document":
            title, text = _titled(change.title, text)
            if title != change.title:
                change = change.model_copy(update={"title": title})
        node = await self._parent_node(change.into, where)
        depth = await self.snap.depth(node["id"]) + 1
        if depth > MAX_PAGE_DEPTH:
            raise self._too_deep(where, depth)
        kids: list[list[str]] = list(node["children"])
        at = len(kids) if change.at is None else change.at
        if at > len(kids):
            raise ChangeError(f"{where}: at {at} is past the end of its {len(kids)} siblings")
        taken = {slug for _, slug in kids}
        title = change.title or "Untitled"
        if change.slug is not None:
            slug = _check_slug(change.slug, where)
            if slug in taken:
                raise ChangeError(f"{where}: a sibling page already uses the slug {slug!r}")
        else:
            slug = free_slug(page_slug(title), taken)
        self._require_new_ref(change.ref, where)
        page_id = new_id()
        record: Record = {
            **PAGE_DEFAULTS,
            "id": page_id,
            "title": title,
            "slug": slug,
            "parent": node["id"] or None,
            "type": kind,
            "markdown": self.snap.put_text(text) if kind == "document" else None,
            **({"href": href or ""} if kind == "link" else {}),
            "createdAt": self.now,
            "updatedAt": self.now,
        }
        for name in ("emoji", "icon", "description", "condition"):
            value = getattr(change, name)
            if value is not None:
                record[name] = value
        for name in ("hidden", "noIndex", "noRobotsIndex"):
            record[name] = bool(getattr(change, name))
        kids.insert(at, [page_id, slug])
        self.snap.put_page({**node, "children": kids})
        self.snap.put_page(record)
        if change.ref is not None:
            self.refs[change.ref] = ("page", page_id)
        self.outcome.created.append((change.ref, page_id))
        self._rewritten.add(page_id)
        self._written_at[page_id] = where

    async def _update_page(self, change: UpdatePage, where: str) -> None:
        page = dict(await self._existing(change.page, where))
        given = change.model_fields_set
        for name in ("title", "hidden", "noIndex", "noRobotsIndex"):
            if name in given and getattr(change, name) is None:
                raise ChangeError(f"{where}: {name} must not be null")
        for name in (*_PAGE_FIELDS, "condition"):
            if name in given:
                page[name] = getattr(change, name)
        if "document" in given:
            if change.document is None:
                raise ChangeError(f"{where}: document must not be null")
            if page["type"] != "document":
                raise ChangeError(f"{where}: only document pages have a body")
            stored = await self._stored(page)
            await self._remember_includes(page, stored)
            text = self._markdown(change.document, where)
            if "title" in given or md.leading_title(stored) is not None:
                # A body that held its own heading (its title differs) keeps a heading as
                # content: read back and written again, it renames nothing.
                page["title"], text = _titled(page["title"], text)
            else:
                # Its heading was taken as the title (or it had none): a new one is the title, as
                # on insert.
                title, text = _titled(None, text)
                page["title"] = title if title is not None else page["title"]
            page["markdown"] = self.snap.put_text(text)
            self._rewritten.add(page["id"])
            self._written_at[page["id"]] = where
        old_parent = page["parent"]
        moving = "into" in given or "at" in given
        new_parent = self._page_id(change.into) if "into" in given and change.into else None
        if "into" not in given:
            new_parent = old_parent
        if moving and new_parent is not None:
            if new_parent == page["id"]:
                raise ChangeError(f"{where}: a page cannot move under itself")
            target = await self._parent_node(new_parent, where)
            chain = await self.snap.ancestors(target["id"])
            if any(a["id"] == page["id"] for a in chain):
                raise ChangeError(f"{where}: a page cannot move under one of its descendants")
            if page["type"] == "group":
                raise ChangeError(f"{where}: group pages belong at the root")
            # Only a move deeper can break the limit; measuring the subtree costs a load of it.
            target_depth = await self.snap.depth(target["id"])
            if new_parent != old_parent and target_depth >= await self.snap.depth(page["id"]):
                depth = target_depth + await self.snap.height(page["id"])
                if depth > MAX_PAGE_DEPTH:
                    raise self._too_deep(where, depth)
        slug = page["slug"]
        if "slug" in given:
            if change.slug is None:
                raise ChangeError(f"{where}: slug must not be null")
            slug = _check_slug(change.slug, where)
        # Detach from the old parent, then attach (possibly to the same one) where asked.
        old_node = await self.snap.node(old_parent)
        assert old_node is not None  # a live page's parent exists: the tree is kept whole
        old_kids = [list(k) for k in old_node["children"]]
        index = next(i for i, (cid, _) in enumerate(old_kids) if cid == page["id"])
        del old_kids[index]
        if new_parent == old_parent:
            node, kids = old_node, old_kids
            at = index if change.at is None else change.at
        else:
            self.snap.put_page({**old_node, "children": old_kids})
            node = await self._parent_node(new_parent, where)
            kids = [list(k) for k in node["children"]]
            at = len(kids) if change.at is None else change.at
        if at > len(kids):
            raise ChangeError(f"{where}: at {at} is past the end of its {len(kids)} siblings")
        if slug in {s for _, s in kids}:
            raise ChangeError(f"{where}: a sibling page already uses the slug {slug!r}")
        kids.insert(at, [page["id"], slug])
        if kids != node["children"]:
            # Only when the page moved or was renamed: a parent's record holds every child,
            # so rewriting it for a title or body edit would cost as much as its width.
            self.snap.put_page({**node, "children": kids})
        page.update(slug=slug, parent=new_parent, updatedAt=self.now)
        self.snap.put_page(page)
        if page["id"] not in self.outcome.updated:
            self.outcome.updated.append(page["id"])

    async def _delete_page(self, change: DeletePage, where: str) -> None:
        page = await self._existing(change.page, where)
        await self._remove(page)

    async def _remove(self, page: Record) -> None:
        node = await self.snap.node(page["parent"])
        assert node is not None
        kids = [k for k in node["children"] if k[0] != page["id"]]
        self.snap.put_page({**node, "children": kids})
        for gone in [page, *await self.snap.subtree(page["id"])]:
            self.snap.drop_page(gone["id"])
            self.outcome.deleted.append(gone["id"])

    async def _revert_page(self, change: RevertPage, where: str) -> None:
        revision = change.revision or self.default_revert_to
        if revision is None:
            raise ChangeError(f"{where}: name the revision to revert the page to")
        old_snap = await self.load_snapshot(revision)
        if old_snap is None:
            raise ChangeError(f"{where}: revision {revision!r} does not exist in this space")
        page_id = self._page_id(change.page)
        old = await old_snap.page(page_id)
        current = await self.snap.page(page_id)
        if change.block:
            await self._revert_blocks(change, where, old_snap, old, current)
            return
        if old is None and current is None:
            raise ChangeError(f"{where}: page {change.page!r} exists in neither revision")
        if old is None:
            assert current is not None
            await self._remove(current)
            return
        restored = {k: v for k, v in old.items() if k not in ("parent", "children", "slug")}
        if current is not None:
            node = await self.snap.node(current["parent"])
            assert node is not None
            taken = {s for cid, s in node["children"] if cid != page_id}
            slug = old["slug"] if old["slug"] not in taken else current["slug"]
            kids = [[cid, slug if cid == page_id else s] for cid, s in node["children"]]
            self.snap.put_page({**node, "children": kids})
            self.snap.put_page(
                {
                    **restored,
                    "parent": current["parent"],
                    "children": current["children"],
                    "slug": slug,
                    "updatedAt": self.now,
                }
            )
            self.outcome.updated.append(page_id)
        else:
            # Back under its old parent when that still exists, else at the root; its old
            # children are not brought back (they may live elsewhere now).
            parent = (
                old["parent"] if old["parent"] and await self.snap.page(old["parent"]) else None
            )
            node = await self.snap.node(parent)
            assert node is not None
            depth = await self.snap.depth(node["id"]) + 1
            if depth > MAX_PAGE_DEPTH:
                raise self._too_deep(where, depth)
            kids = [list(k) for k in node["children"]]
            slug = free_slug(old["slug"], {s for _, s in kids})
            old_node = await old_snap.node(old["parent"])
            old_index = next(
                (
                    i
                    for i, (cid, _) in enumerate((old_node or {}).get("children", []))
                    if cid == page_id
                ),
                len(kids),
            )
            kids.insert(min(old_index, len(kids)), [page_id, slug])
            self.snap.put_page({**node, "children": kids})
            self.snap.put_page(
                {**restored, "parent": parent, "children": [], "slug": slug, "updatedAt": self.now}
            )
            self.outcome.created.append((None, page_id))

    async def _revert_blocks(
        self,
        change: RevertPage,
        where: str,
        old_snap: Snapshot,
        old: Record | None,
        current: Record | None,
    ) -> None:
        """Only the named block-level changes of the page's document (document/blocks.py);
        the page's other blocks and its properties stay as they are."""
        if current is None:
            raise ChangeError(f"{where}: page {change.page!r} does not exist; omit block")
        if current["type"] != "document" or (old is not None and old["type"] != "document"):
            raise ChangeError(f"{where}: only a document page has blocks to revert")
        old_text = "" if old is None else await old_snap.markdown(old)
        new_text = await self.snap.markdown(current)
        await parsing.warm([old_text, new_text])
        # The result is written from the documents, so the page's other blocks pass through the
        # document form: refused when that would change how either text reads.
        for label, source in (("the page", new_text), ("the page reverted to", old_text)):
            if not _document_keeps(source):
                raise ChangeError(
                    f"{where}: {label} holds markdown its document form does not keep (raw "
                    "HTML, table alignment or the like), so its blocks cannot be reverted one "
                    "by one; omit block to revert the whole page"
                )
        nodes = blocks.revert(
            md.to_document(old_text)["nodes"],
            md.to_document(new_text)["nodes"],
            set(change.block or ()),
        )
        if isinstance(nodes, str):
            raise ChangeError(f"{where}: {nodes}")
        try:
            text = document_to_markdown({"object": "document", "data": {}, "nodes": nodes})
        except BadRequest as exc:
            raise ChangeError(f"{where}: {exc.message}") from None
        problem = md.check(text)
        if problem is not None:
            raise ChangeError(f"{where}: {problem}")
        if text == new_text:
            return
        await self._remember_includes(current)
        self.snap.put_page({**current, "markdown": self.snap.put_text(text), "updatedAt": self.now})
        self._rewritten.add(current["id"])
        self._written_at[current["id"]] = where
        if current["id"] not in self.outcome.updated:
            self.outcome.updated.append(current["id"])

    # Reusable contents

    def _reusable_markdown(self, document: DocumentBody, where: str) -> str:
        text = self._markdown(document, where)
        # One level only, as in GitBook: a reader never follows a chain (or a cycle).
        if reusable.includes(text):
            raise ChangeError(f"{where}: a reusable content cannot include reusable content")
        return text

    async def _existing_reusable(self, ref: str, where: str) -> Record:
        rec = await self.snap.reusable(self.reusable_refs.get(ref, ref))
        if rec is None:
            raise ChangeError(f"{where}: reusable content {ref!r} does not exist")
        return rec

    async def _insert_reusable(self, change: InsertReusableContent, where: str) -> None:
        text = self._reusable_markdown(change.document, where)
        self._require_new_ref(change.ref, where)
        record: Record = {
            "id": new_id(),
            "title": change.title,
            "markdown": self.snap.put_text(text),
            "createdAt": self.now,
            "updatedAt": self.now,
        }
        self.snap.put_reusable(record)
        self._reusable_texts.add(record["id"])
        self._by_slug = None
        if change.ref is not None:
            self.reusable_refs[change.ref] = record["id"]
        self.outcome.reusables.append((change.ref, record["id"]))

    async def _update_reusable(self, change: UpdateReusableContent, where: str) -> None:
        record = dict(await self._existing_reusable(change.reusableContent, where))
        given = change.model_fields_set
        if "title" in given:
            if change.title is None:
                raise ChangeError(f"{where}: title must not be null")
            record["title"] = change.title
            self._by_slug = None
        if "document" in given:
            if change.document is None:
                raise ChangeError(f"{where}: document must not be null")
            record["markdown"] = self.snap.put_text(self._reusable_markdown(change.document, where))
            self._reusable_texts.add(record["id"])
        record["updatedAt"] = self.now
        self.snap.put_reusable(record)

    async def _delete_reusable(self, change: DeleteReusableContent, where: str) -> None:
        record = await self._existing_reusable(change.reusableContent, where)
        self.snap.drop_reusable(record["id"])
        self._by_slug = None

    async def _include_target(self, target: str) -> str | None:
        """The id an include of this batch names: a ref of the batch, an id the revision
        holds, or Git Sync's `.gitbook/includes/<slug>.md` path (the slug of a title)."""
        if target in self.reusable_refs:
            return self.reusable_refs[target]
        if _ID.fullmatch(target) and await self.snap.reusable(target) is not None:
            return target
        slug = reusable.git_slug(target)
        if slug is None:
            return None
        imported = self.reusable_refs.get(f"{reusable.INCLUDES_DIR}/{slug}.md")
        if imported is not None:
            return imported
        if self._by_slug is None:
            self._by_slug = {}
            for rid, rec in sorted((await self.snap.all_reusables()).items()):
                self._by_slug.setdefault(page_slug(rec["title"]), rid)
        return self._by_slug.get(slug)

    async def _stored(self, page: Record) -> str:
        """The page's body as the batch has it so far."""
        return await self.snap.markdown(page) if page.get("markdown") else ""

    async def _remember_includes(self, page: Record, stored: str | None = None) -> None:
        if page["id"] in self._included_before:
            return
        text = await self._stored(page) if stored is None else stored
        self._included_before[page["id"]] = {target for _, target in reusable.includes(text)}

    async def _resolve_includes(self, page: Record, text: str) -> str:
        # An include the page already held may name a reusable content deleted since (deletes
        # leave includes as they are): kept as written, so the page stays editable. A new one
        # must name something.
        tolerated = self._included_before.get(page["id"], set())
        targets: dict[str, str] = {}
        for _, target in reusable.includes(text):
            if target in targets:
                continue
            found = await self._include_target(target)
            if found is None and (not self.strict_includes or target in tolerated):
                continue
            if found is None:
                where = self._written_at.get(page["id"], f"page {page['title']!r}")
                raise ChangeError(
                    f"{where}: {{% include %}} names reusable content "
                    f"{target!r}, which does not exist in this revision"
                )
            targets[target] = found
        return reusable.rewrite(text, targets)

    # Files

    async def _insert_files(self, change: InsertFiles, where: str) -> None:
        for i, item in enumerate(change.files):
            await self._insert_file(item, f"{where}.files[{i}]")

    async def _insert_file(self, item: FileInput, where: str) -> None:
        self._require_new_ref(item.ref, where)
        content_type = item.contentType
        if item.base64 is not None:
            try:
                data = base64.b64decode(item.base64, validate=True)
            except (binascii.Error, ValueError):
                raise ChangeError(f"{where}: base64 is not valid base64") from None
        else:
            assert item.url is not None
            self._fetches += 1
            if self._fetches > MAX_URL_FILES:
                raise ChangeError(f"{where}: at most {MAX_URL_FILES} files by URL per batch")
            try:
                data, fetched_type = await self.fetch_file(item.url)
            except BadRequest as exc:
                raise ChangeError(f"{where}: {exc.message}") from None
            content_type = content_type or fetched_type
        content_type = (
            content_type or mimetypes.guess_type(item.name)[0] or "application/octet-stream"
        )
        await self._store_file(item.name, content_type, data, item.ref)

    async def _store_file(self, name: str, content_type: str, data: bytes, ref: str | None) -> None:
        record = self._file_record(new_id(), name, content_type, data, self.now)
        self.snap.put_file(record)
        if ref is not None:
            self.refs[ref] = ("file", record["id"])
        self.outcome.files.append(record)

    def _file_record(
        self, file_id: str, name: str, content_type: str, data: bytes, created_at: str
    ) -> Record:
        key = blob_key(data)
        self.outcome.blobs[key] = data
        record: Record = {
            "id": file_id,
            "name": name,
            "contentType": content_type,
            "size": len(data),
            "blob": key,
            "createdAt": created_at,
        }
        dimensions = image_dimensions(data, content_type)
        if dimensions is not None:
            record["dimensions"] = {"width": dimensions[0], "height": dimensions[1]}
        return record

    async def _existing_file(self, file_id: str, where: str) -> Record:
        found = await self.snap.file(file_id)
        if found is None:
            raise ChangeError(f"{where}: no file {file_id!r} in this revision")
        return found

    async def replace_file(self, file_id: str, data: bytes, where: str) -> None:
        """The file's bytes replaced, its id, name and type kept (links to it still lead to
        it): Git Sync's changed file under .gitbook/assets/."""
        found = await self._existing_file(file_id, where)
        made = self._file_record(
            file_id, found["name"], found["contentType"], data, found["createdAt"]
        )
        self.snap.put_file(made)

    async def remove_file(self, file_id: str, where: str) -> None:
        await self._existing_file(file_id, where)
        self.snap.drop_file(file_id)

    # Links

    async def _resolve_links(self) -> None:
        """Rewrites the links of every page whose body this batch set into stable references
        (`/pages/<id>`, `/files/<id>`), so renames and moves never break them."""
        for page_id in self._rewritten:
            page = await self.snap.page(page_id)
            if page is None or not page.get("markdown"):
                continue
            text = await self.snap.markdown(page)
            here = posixpath.dirname(await self.snap.path(page_id))
            targets: dict[str, str] = {}
            await parsing.warm([text])
            for link in md.iter_links(text):
                resolved = await self._resolve(link.target, here)
                if resolved is not None:
                    targets[link.target] = resolved
            new_text = await self._resolve_includes(page, text)
            if targets:
                new_text = md.rewrite_links(new_text, _lookup(targets))
            if new_text != text:
                self.snap.put_page({**page, "markdown": self.snap.put_text(new_text)})

    async def _resolve(self, target: str, here: str) -> str | None:
        if not target or md.is_external(target):
            return None  # external URLs stay as they are
        path, _, anchor = target.partition("#")
        suffix = f"#{anchor}" if anchor else ""
        if path.startswith("./") and path[2:] in self.refs:
            kind, ref_id = self.refs[path[2:]]
            return f"/{kind}s/{ref_id}{suffix}"
        if path.startswith("/pages/"):
            return await self._pages_form(path[len("/pages/") :], suffix)
        if not path or _FILE_LINK.match(path):
            return None  # already stable
        found = await self._page_at(path, here)
        return None if found is None else f"/pages/{found}{suffix}"

    async def _pages_form(self, rest: str, suffix: str) -> str | None:
        """GitBook's `/pages/<id>`, `/pages/<id>.md`, `/pages/<slug path>` and
        `/pages/<slug path>.md`: an existing page id wins, then the slug path from the root."""
        name = rest[: -len(".md")] if rest.endswith(".md") else rest
        if _ID.fullmatch(name) and await self.snap.page(name) is not None:
            return None if name == rest else f"/pages/{name}{suffix}"
        found = await self.snap.resolve_path(name.strip("/")) if name.strip("/") else None
        return None if found is None else f"/pages/{found}{suffix}"

    async def _page_at(self, path: str, here: str) -> str | None:
        """A page named by a Git-style `.md` path (relative to the linking page's folder, or from
        the space root with a leading '/') or by its slug path."""
        if path.endswith(".md"):
            base = path[: -len(".md")]
            if base == "README" or base.endswith("/README"):
                base = base[: -len("README")].rstrip("/")
            joined = base.lstrip("/") if path.startswith("/") else posixpath.join(here, base)
            normalized = posixpath.normpath(joined) if joined else ""
            if normalized.startswith(".."):
                return None
            if normalized in ("", "."):
                return None
            return await self.snap.resolve_path(normalized)
        return await self.snap.resolve_path(path)


def _titled(given: str | None, text: str) -> tuple[str | None, str]:
    """The page's title and body when `text` opens with a `# heading`: GitBook takes that heading
    as the title (as its Git Sync does), so the reader and the PDF, which show the title, do not
    show it twice. Taken when no title is given (it becomes the title) or the given one is the
    same text; a different given title keeps the heading as content."""
    split = md.leading_title(text)
    if split is None:
        return given, text
    heading, body = split
    if given is None or " ".join(given.split()) == heading:
        return (given if given is not None else heading), body
    return given, text


def _lookup(targets: dict[str, str]) -> Callable[[str, bool], str | None]:
    def resolve(target: str, _image: bool) -> str | None:
        return targets.get(target)

    return resolve


def render_links(text: str, paths: dict[str, str], here: str) -> str:
    """Stable page references as relative `.md` paths from the reading page's folder."""

    def relative(target: str, _image: bool) -> str | None:
        path, _, anchor = target.partition("#")
        match = _PAGE_LINK.match(path)
        if match is None or match[1] not in paths:
            return None
        rel = posixpath.relpath(paths[match[1]] + ".md", here or ".")
        return rel + (f"#{anchor}" if anchor else "")

    return md.rewrite_links(text, relative)


def page_link_targets(text: str) -> set[str]:
    out: set[str] = set()
    for link in md.iter_links(text):
        match = _PAGE_LINK.match(link.target.partition("#")[0])
        if match:
            out.add(match[1])
    return out


def image_dimensions(data: bytes, content_type: str) -> tuple[int, int] | None:
    if not content_type.startswith("image/"):
        return None
    # Pillow loads only where an image is measured (a write), not in every reading process.
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        return None
    return int(width), int(height)
