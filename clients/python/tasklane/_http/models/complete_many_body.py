from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.complete_item import CompleteItem


T = TypeVar("T", bound="CompleteManyBody")


@_attrs_define
class CompleteManyBody:
    """A batched completion: 1..500 attempts that succeeded.

    Attributes:
        items (list[CompleteItem]): 1..500 items, each of a different task.
        worker_id (str): The worker's own name, 1..200 bytes.
    """

    items: list[CompleteItem]
    worker_id: str

    def to_dict(self) -> dict[str, Any]:
        items = []
        for items_item_data in self.items:
            items_item = items_item_data.to_dict()
            items.append(items_item)

        worker_id = self.worker_id

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "items": items,
                "worker_id": worker_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.complete_item import CompleteItem

        d = dict(src_dict)
        items = []
        _items = d.pop("items")
        for items_item_data in _items:
            items_item = CompleteItem.from_dict(items_item_data)

            items.append(items_item)

        worker_id = d.pop("worker_id")

        complete_many_body = cls(
            items=items,
            worker_id=worker_id,
        )

        return complete_many_body
