from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.error_view import ErrorView


T = TypeVar("T", bound="CompleteItemAnswer")


@_attrs_define
class CompleteItemAnswer:
    """What a batched completion did with one attempt.

    Attributes:
        id (UUID):
        status (str): `succeeded`, `lease_lost`, `task_gone` or `invalid_output` (the task type has an
            output schema and `result.output` does not match it; nothing was written).
        error (ErrorView | None | Unset):
    """

    id: UUID
    status: str
    error: ErrorView | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.error_view import ErrorView

        id = str(self.id)

        status = self.status

        error: dict[str, Any] | None | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        elif isinstance(self.error, ErrorView):
            error = self.error.to_dict()
        else:
            error = self.error

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "status": status,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.error_view import ErrorView

        d = dict(src_dict)
        id = UUID(d.pop("id"))

        status = d.pop("status")

        def _parse_error(data: object) -> ErrorView | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                error_type_0 = ErrorView.from_dict(data)

                return error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ErrorView | None | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        complete_item_answer = cls(
            id=id,
            status=status,
            error=error,
        )

        complete_item_answer.additional_properties = d
        return complete_item_answer

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
