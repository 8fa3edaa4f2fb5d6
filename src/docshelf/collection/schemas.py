from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import StringConstraints, model_validator

from docshelf.collection.ordering import Item
from docshelf.kit.schemas import Body, EntityId, Out, Role

DefaultLevel = Role | Literal["inherit"] | None


class SpacePointer(Body):
    type: Literal["space"]
    space: EntityId


class CollectionPointer(Body):
    type: Literal["collection"]
    collection: EntityId


Pointer = SpacePointer | CollectionPointer


class Position(Body):
    before: Pointer | None = None
    after: Pointer | None = None

    @model_validator(mode="after")
    def _one(self) -> Position:
        if self.before is not None and self.after is not None:
            raise ValueError("give 'before' or 'after', not both")
        return self

    def anchors(self) -> tuple[Item | None, Item | None]:
        def item(p: Pointer | None) -> Item | None:
            if p is None:
                return None
            return (
                ("space", p.space) if isinstance(p, SpacePointer) else ("collection", p.collection)
            )

        return item(self.before), item(self.after)


class CreateCollection(Body):
    title: Annotated[str, StringConstraints(max_length=50)] | None = None
    parent: EntityId | None = None


class UpdateCollection(Body):
    title: Annotated[str, StringConstraints(min_length=1, max_length=50)] | None = None
    description: Annotated[str, StringConstraints(max_length=100)] | None = None
    defaultLevel: DefaultLevel = None


class MoveContent(Body):
    parent: EntityId | None = None
    position: Position | None = None

    @model_validator(mode="after")
    def _not_empty(self) -> MoveContent:
        if not self.model_fields_set:
            raise ValueError("give 'parent' and/or 'position'")
        return self


class TransferContent(Body):
    organization: EntityId


class CollectionOut(Out):
    object: Literal["collection"]
    id: str
    title: str
    description: str | None = None
    organization: str
    parent: str | None = None
    defaultLevel: DefaultLevel
    urls: dict[str, str]
    permissions: dict[str, bool]


class CollectionList(Out):
    items: list[CollectionOut]
    count: int
    next: dict[str, Any] | None = None
