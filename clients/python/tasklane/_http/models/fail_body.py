from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="FailBody")


@_attrs_define
class FailBody:
    """
    Attributes:
        code (str): 1..64 bytes.
        lease_token (UUID):
        message (str): Cut to 1 KiB.
        retryable (bool):
        retry_after_seconds (int | None | Unset):
    """

    code: str
    lease_token: UUID
    message: str
    retryable: bool
    retry_after_seconds: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        code = self.code

        lease_token = str(self.lease_token)

        message = self.message

        retryable = self.retryable

        retry_after_seconds: int | None | Unset
        if isinstance(self.retry_after_seconds, Unset):
            retry_after_seconds = UNSET
        else:
            retry_after_seconds = self.retry_after_seconds

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "code": code,
                "lease_token": lease_token,
                "message": message,
                "retryable": retryable,
            }
        )
        if retry_after_seconds is not UNSET:
            field_dict["retry_after_seconds"] = retry_after_seconds

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        code = d.pop("code")

        lease_token = UUID(d.pop("lease_token"))

        message = d.pop("message")

        retryable = d.pop("retryable")

        def _parse_retry_after_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        retry_after_seconds = _parse_retry_after_seconds(
            d.pop("retry_after_seconds", UNSET)
        )

        fail_body = cls(
            code=code,
            lease_token=lease_token,
            message=message,
            retryable=retryable,
            retry_after_seconds=retry_after_seconds,
        )

        return fail_body
