from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="WeightBody")


@_attrs_define
class WeightBody:
    """Body of `PUT /v1/admin/apps/{app}/weight`.

    Attributes:
        weight (int): The app's share of the claims' turns against the other apps with claimable work
            in the same priority level (1..100; an app never set weighs 1).
    """

    weight: int

    def to_dict(self) -> dict[str, Any]:
        weight = self.weight

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "weight": weight,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        weight = d.pop("weight")

        weight_body = cls(
            weight=weight,
        )

        return weight_body
