from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar
from uuid import UUID

from attrs import define as _attrs_define

T = TypeVar("T", bound="OutputBody")


@_attrs_define
class OutputBody:
    """Text for a running attempt's live output.

    Attributes:
        lease_token (UUID):
        text (str): Appended to the attempt's text; at most 64 KiB.
    """

    lease_token: UUID
    text: str

    def to_dict(self) -> dict[str, Any]:
        lease_token = str(self.lease_token)

        text = self.text

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "lease_token": lease_token,
                "text": text,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        lease_token = UUID(d.pop("lease_token"))

        text = d.pop("text")

        output_body = cls(
            lease_token=lease_token,
            text=text,
        )

        return output_body
