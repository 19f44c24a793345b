from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.provenance_body import ProvenanceBody
    from ..models.usage_body import UsageBody


T = TypeVar("T", bound="CompleteItem")


@_attrs_define
class CompleteItem:
    """One attempt's success, as `POST /v1/worker/tasks/{id}/complete` takes it.

    Attributes:
        id (UUID):
        lease_token (UUID):
        result (Any):
        provenance (None | ProvenanceBody | Unset):
        usage (None | Unset | UsageBody):
    """

    id: UUID
    lease_token: UUID
    result: Any
    provenance: None | ProvenanceBody | Unset = UNSET
    usage: None | Unset | UsageBody = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.provenance_body import ProvenanceBody
        from ..models.usage_body import UsageBody

        id = str(self.id)

        lease_token = str(self.lease_token)

        result = self.result

        provenance: dict[str, Any] | None | Unset
        if isinstance(self.provenance, Unset):
            provenance = UNSET
        elif isinstance(self.provenance, ProvenanceBody):
            provenance = self.provenance.to_dict()
        else:
            provenance = self.provenance

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
                "id": id,
                "lease_token": lease_token,
                "result": result,
            }
        )
        if provenance is not UNSET:
            field_dict["provenance"] = provenance
        if usage is not UNSET:
            field_dict["usage"] = usage

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.provenance_body import ProvenanceBody
        from ..models.usage_body import UsageBody

        d = dict(src_dict)
        id = UUID(d.pop("id"))

        lease_token = UUID(d.pop("lease_token"))

        result = d.pop("result")

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

        complete_item = cls(
            id=id,
            lease_token=lease_token,
            result=result,
            provenance=provenance,
            usage=usage,
        )

        return complete_item
