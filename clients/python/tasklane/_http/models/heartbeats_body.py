from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.heartbeat_item import HeartbeatItem


T = TypeVar("T", bound="HeartbeatsBody")


@_attrs_define
class HeartbeatsBody:
    """A batched heartbeat: 1..500 leases of the worker's running attempts.

    Attributes:
        items (list[HeartbeatItem]): 1..500 items, each of a different task.
        worker_id (str): The worker's own name, 1..200 bytes.
    """

    items: list[HeartbeatItem]
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
        from ..models.heartbeat_item import HeartbeatItem

        d = dict(src_dict)
        items = []
        _items = d.pop("items")
        for items_item_data in _items:
            items_item = HeartbeatItem.from_dict(items_item_data)

            items.append(items_item)

        worker_id = d.pop("worker_id")

        heartbeats_body = cls(
            items=items,
            worker_id=worker_id,
        )

        return heartbeats_body
