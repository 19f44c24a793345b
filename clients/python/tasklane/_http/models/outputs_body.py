from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.output_item_body import OutputItemBody


T = TypeVar("T", bound="OutputsBody")


@_attrs_define
class OutputsBody:
    """A batched live output write: text for 1..500 running attempts, each of a different
    task (a worker's round of output from all its attempts in one request).

        Attributes:
            items (list[OutputItemBody]): 1..500 items, each of a different task.
    """

    items: list[OutputItemBody]

    def to_dict(self) -> dict[str, Any]:
        items = []
        for items_item_data in self.items:
            items_item = items_item_data.to_dict()
            items.append(items_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "items": items,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.output_item_body import OutputItemBody

        d = dict(src_dict)
        items = []
        _items = d.pop("items")
        for items_item_data in _items:
            items_item = OutputItemBody.from_dict(items_item_data)

            items.append(items_item)

        outputs_body = cls(
            items=items,
        )

        return outputs_body
