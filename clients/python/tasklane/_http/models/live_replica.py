from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="LiveReplica")


@_attrs_define
class LiveReplica:
    """
    Attributes:
        heartbeat_at (datetime.datetime):
        id (UUID):
        name (str):
        started_at (datetime.datetime):
    """

    heartbeat_at: datetime.datetime
    id: UUID
    name: str
    started_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        heartbeat_at = self.heartbeat_at.isoformat()

        id = str(self.id)

        name = self.name

        started_at = self.started_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "heartbeat_at": heartbeat_at,
                "id": id,
                "name": name,
                "started_at": started_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        heartbeat_at = datetime.datetime.fromisoformat(d.pop("heartbeat_at"))

        id = UUID(d.pop("id"))

        name = d.pop("name")

        started_at = datetime.datetime.fromisoformat(d.pop("started_at"))

        live_replica = cls(
            heartbeat_at=heartbeat_at,
            id=id,
            name=name,
            started_at=started_at,
        )

        live_replica.additional_properties = d
        return live_replica

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
