from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define

T = TypeVar("T", bound="PauseBody")


@_attrs_define
class PauseBody:
    """Body of `PUT /v1/admin/task-types/{name}/pause`, and its answer with the name.

    Attributes:
        paused (bool): true: no claim takes the type's tasks (they stay queued); false: resume.
    """

    paused: bool

    def to_dict(self) -> dict[str, Any]:
        paused = self.paused

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "paused": paused,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        paused = d.pop("paused")

        pause_body = cls(
            paused=paused,
        )

        return pause_body
