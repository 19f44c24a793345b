from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar
from uuid import UUID

from attrs import define as _attrs_define

T = TypeVar("T", bound="CancelledBody")


@_attrs_define
class CancelledBody:
    """
    Attributes:
        lease_token (UUID):
    """

    lease_token: UUID

    def to_dict(self) -> dict[str, Any]:
        lease_token = str(self.lease_token)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "lease_token": lease_token,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        lease_token = UUID(d.pop("lease_token"))

        cancelled_body = cls(
            lease_token=lease_token,
        )

        return cancelled_body
