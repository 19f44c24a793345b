from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar
from uuid import UUID

from attrs import define as _attrs_define

T = TypeVar("T", bound="OutputItemBody")


@_attrs_define
class OutputItemBody:
    """Text for one running attempt's live output, as `POST /v1/worker/tasks/{id}/output`
    takes it.

        Attributes:
            id (UUID):
            lease_token (UUID):
            text (str): Appended to the attempt's text; at most 64 KiB.
    """

    id: UUID
    lease_token: UUID
    text: str

    def to_dict(self) -> dict[str, Any]:
        id = str(self.id)

        lease_token = str(self.lease_token)

        text = self.text

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "id": id,
                "lease_token": lease_token,
                "text": text,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = UUID(d.pop("id"))

        lease_token = UUID(d.pop("lease_token"))

        text = d.pop("text")

        output_item_body = cls(
            id=id,
            lease_token=lease_token,
            text=text,
        )

        return output_item_body
