from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="ActivityMinute")


@_attrs_define
class ActivityMinute:
    """One minute of activity (the database's clock).

    Attributes:
        cancelled (int):
        failed (int):
        minute (datetime.datetime): The minute's start.
        submitted (int): Tasks created in this minute (still in the table: pruned or deleted ones are gone).
        succeeded (int): Tasks that reached each terminal state in this minute.
    """

    cancelled: int
    failed: int
    minute: datetime.datetime
    submitted: int
    succeeded: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cancelled = self.cancelled

        failed = self.failed

        minute = self.minute.isoformat()

        submitted = self.submitted

        succeeded = self.succeeded

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "cancelled": cancelled,
                "failed": failed,
                "minute": minute,
                "submitted": submitted,
                "succeeded": succeeded,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        cancelled = d.pop("cancelled")

        failed = d.pop("failed")

        minute = datetime.datetime.fromisoformat(d.pop("minute"))

        submitted = d.pop("submitted")

        succeeded = d.pop("succeeded")

        activity_minute = cls(
            cancelled=cancelled,
            failed=failed,
            minute=minute,
            submitted=submitted,
            succeeded=succeeded,
        )

        activity_minute.additional_properties = d
        return activity_minute

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
