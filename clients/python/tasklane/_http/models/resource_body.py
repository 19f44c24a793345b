from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="ResourceBody")


@_attrs_define
class ResourceBody:
    """Body of `PUT /v1/admin/resources/{name}`.

    Attributes:
        slots (int): Tasks of this resource running at once across all replicas (0..10000).
    """

    slots: int

    def to_dict(self) -> dict[str, Any]:
        slots = self.slots

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "slots": slots,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        slots = d.pop("slots")

        resource_body = cls(
            slots=slots,
        )

        return resource_body
