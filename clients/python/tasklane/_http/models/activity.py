from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.activity_minute import ActivityMinute


T = TypeVar("T", bound="Activity")


@_attrs_define
class Activity:
    """The last 60 minutes, oldest first, the current (partial) minute last.

    Attributes:
        minutes (list[ActivityMinute]):
    """

    minutes: list[ActivityMinute]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        minutes = []
        for minutes_item_data in self.minutes:
            minutes_item = minutes_item_data.to_dict()
            minutes.append(minutes_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "minutes": minutes,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.activity_minute import ActivityMinute

        d = dict(src_dict)
        minutes = []
        _minutes = d.pop("minutes")
        for minutes_item_data in _minutes:
            minutes_item = ActivityMinute.from_dict(minutes_item_data)

            minutes.append(minutes_item)

        activity = cls(
            minutes=minutes,
        )

        activity.additional_properties = d
        return activity

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
