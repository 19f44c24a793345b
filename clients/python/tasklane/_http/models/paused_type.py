from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="PausedType")


@_attrs_define
class PausedType:
    """A task type whose tasks no claim takes until it is resumed.

    Attributes:
        paused_at (datetime.datetime):
        task_type (str):
    """

    paused_at: datetime.datetime
    task_type: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        paused_at = self.paused_at.isoformat()

        task_type = self.task_type

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "paused_at": paused_at,
                "task_type": task_type,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        paused_at = datetime.datetime.fromisoformat(d.pop("paused_at"))

        task_type = d.pop("task_type")

        paused_type = cls(
            paused_at=paused_at,
            task_type=task_type,
        )

        paused_type.additional_properties = d
        return paused_type

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
