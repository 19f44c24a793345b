from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Whoami")


@_attrs_define
class Whoami:
    """The caller's token: its owner, its permissions, and the task types this replica
    accepts at submit.

        Attributes:
            app (str):
            permissions (list[str]): The token's permissions (`submit`, `read`, `cancel`, ..., `admin`).
            task_types (list[str]): The task types registered on this replica, sorted by name.
            scope_id (None | str | Unset): Present for a scope token: it sees only this scope, with the redacted view.
    """

    app: str
    permissions: list[str]
    task_types: list[str]
    scope_id: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        app = self.app

        permissions = self.permissions

        task_types = self.task_types

        scope_id: None | str | Unset
        if isinstance(self.scope_id, Unset):
            scope_id = UNSET
        else:
            scope_id = self.scope_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "app": app,
                "permissions": permissions,
                "task_types": task_types,
            }
        )
        if scope_id is not UNSET:
            field_dict["scope_id"] = scope_id

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        app = d.pop("app")

        permissions = cast(list[str], d.pop("permissions"))

        task_types = cast(list[str], d.pop("task_types"))

        def _parse_scope_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        scope_id = _parse_scope_id(d.pop("scope_id", UNSET))

        whoami = cls(
            app=app,
            permissions=permissions,
            task_types=task_types,
            scope_id=scope_id,
        )

        whoami.additional_properties = d
        return whoami

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
