from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.provenance_body import ProvenanceBody
    from ..models.usage_body import UsageBody


T = TypeVar("T", bound="FailBody")


@_attrs_define
class FailBody:
    """
    Attributes:
        code (str): 1..64 bytes.
        lease_token (UUID):
        message (str): Cut to 1 KiB.
        retryable (bool):
        provenance (None | ProvenanceBody | Unset):
        retry_after_seconds (int | None | Unset):
        usage (None | Unset | UsageBody):
    """

    code: str
    lease_token: UUID
    message: str
    retryable: bool
    provenance: None | ProvenanceBody | Unset = UNSET
    retry_after_seconds: int | None | Unset = UNSET
    usage: None | Unset | UsageBody = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.provenance_body import ProvenanceBody
        from ..models.usage_body import UsageBody

        code = self.code

        lease_token = str(self.lease_token)

        message = self.message

        retryable = self.retryable

        provenance: dict[str, Any] | None | Unset
        if isinstance(self.provenance, Unset):
            provenance = UNSET
        elif isinstance(self.provenance, ProvenanceBody):
            provenance = self.provenance.to_dict()
        else:
            provenance = self.provenance

        retry_after_seconds: int | None | Unset
        if isinstance(self.retry_after_seconds, Unset):
            retry_after_seconds = UNSET
        else:
            retry_after_seconds = self.retry_after_seconds

        usage: dict[str, Any] | None | Unset
        if isinstance(self.usage, Unset):
            usage = UNSET
        elif isinstance(self.usage, UsageBody):
            usage = self.usage.to_dict()
        else:
            usage = self.usage

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "code": code,
                "lease_token": lease_token,
                "message": message,
                "retryable": retryable,
            }
        )
        if provenance is not UNSET:
            field_dict["provenance"] = provenance
        if retry_after_seconds is not UNSET:
            field_dict["retry_after_seconds"] = retry_after_seconds
        if usage is not UNSET:
            field_dict["usage"] = usage

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.provenance_body import ProvenanceBody
        from ..models.usage_body import UsageBody

        d = dict(src_dict)
        code = d.pop("code")

        lease_token = UUID(d.pop("lease_token"))

        message = d.pop("message")

        retryable = d.pop("retryable")

        def _parse_provenance(data: object) -> None | ProvenanceBody | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                provenance_type_0 = ProvenanceBody.from_dict(data)

                return provenance_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ProvenanceBody | Unset, data)

        provenance = _parse_provenance(d.pop("provenance", UNSET))

        def _parse_retry_after_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        retry_after_seconds = _parse_retry_after_seconds(
            d.pop("retry_after_seconds", UNSET)
        )

        def _parse_usage(data: object) -> None | Unset | UsageBody:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                usage_type_0 = UsageBody.from_dict(data)

                return usage_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UsageBody, data)

        usage = _parse_usage(d.pop("usage", UNSET))

        fail_body = cls(
            code=code,
            lease_token=lease_token,
            message=message,
            retryable=retryable,
            provenance=provenance,
            retry_after_seconds=retry_after_seconds,
            usage=usage,
        )

        return fail_body
