from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="WorkerEvent")


@_attrs_define
class WorkerEvent:
    """A worker-emitted event.

    Attributes:
        type_ (str): `task.output` or `task.progress`.
        data (Any | Unset): At most 64 KiB.
    """

    type_: str
    data: Any | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        type_ = self.type_

        data = self.data

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "type": type_,
            }
        )
        if data is not UNSET:
            field_dict["data"] = data

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        type_ = d.pop("type")

        data = d.pop("data", UNSET)

        worker_event = cls(
            type_=type_,
            data=data,
        )

        return worker_event
