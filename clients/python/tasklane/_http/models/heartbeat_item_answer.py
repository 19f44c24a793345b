from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="HeartbeatItemAnswer")


@_attrs_define
class HeartbeatItemAnswer:
    """What a batched heartbeat did with one lease.

    Attributes:
        cancel_requested (bool): The owner asked to cancel: stop and acknowledge with `cancelled`.
        id (UUID):
        status (str): `ok` (extended), `lease_lost` or `task_gone`: on either of the last two the
            worker stops the attempt.
        lease_expires_at (datetime.datetime | None | Unset): The extended lease's end; null unless `ok`.
    """

    cancel_requested: bool
    id: UUID
    status: str
    lease_expires_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cancel_requested = self.cancel_requested

        id = str(self.id)

        status = self.status

        lease_expires_at: None | str | Unset
        if isinstance(self.lease_expires_at, Unset):
            lease_expires_at = UNSET
        elif isinstance(self.lease_expires_at, datetime.datetime):
            lease_expires_at = self.lease_expires_at.isoformat()
        else:
            lease_expires_at = self.lease_expires_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "cancel_requested": cancel_requested,
                "id": id,
                "status": status,
            }
        )
        if lease_expires_at is not UNSET:
            field_dict["lease_expires_at"] = lease_expires_at

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        cancel_requested = d.pop("cancel_requested")

        id = UUID(d.pop("id"))

        status = d.pop("status")

        def _parse_lease_expires_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                lease_expires_at_type_0 = datetime.datetime.fromisoformat(data)

                return lease_expires_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        lease_expires_at = _parse_lease_expires_at(d.pop("lease_expires_at", UNSET))

        heartbeat_item_answer = cls(
            cancel_requested=cancel_requested,
            id=id,
            status=status,
            lease_expires_at=lease_expires_at,
        )

        heartbeat_item_answer.additional_properties = d
        return heartbeat_item_answer

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
