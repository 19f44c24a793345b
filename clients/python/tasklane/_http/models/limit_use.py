from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="LimitUse")


@_attrs_define
class LimitUse:
    """One limit and its use: capacity, tasks holding a slot; rate, admissions in the
    window; budget, units spent today (UTC).

        Attributes:
            id (int):
            kind (str):
            limit (int):
            used (int):
            app (None | str | Unset): None: global.
            usage_subject (None | str | Unset):
            window_seconds (int | None | Unset):
    """

    id: int
    kind: str
    limit: int
    used: int
    app: None | str | Unset = UNSET
    usage_subject: None | str | Unset = UNSET
    window_seconds: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        kind = self.kind

        limit = self.limit

        used = self.used

        app: None | str | Unset
        if isinstance(self.app, Unset):
            app = UNSET
        else:
            app = self.app

        usage_subject: None | str | Unset
        if isinstance(self.usage_subject, Unset):
            usage_subject = UNSET
        else:
            usage_subject = self.usage_subject

        window_seconds: int | None | Unset
        if isinstance(self.window_seconds, Unset):
            window_seconds = UNSET
        else:
            window_seconds = self.window_seconds

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "kind": kind,
                "limit": limit,
                "used": used,
            }
        )
        if app is not UNSET:
            field_dict["app"] = app
        if usage_subject is not UNSET:
            field_dict["usage_subject"] = usage_subject
        if window_seconds is not UNSET:
            field_dict["window_seconds"] = window_seconds

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        kind = d.pop("kind")

        limit = d.pop("limit")

        used = d.pop("used")

        def _parse_app(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        app = _parse_app(d.pop("app", UNSET))

        def _parse_usage_subject(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        usage_subject = _parse_usage_subject(d.pop("usage_subject", UNSET))

        def _parse_window_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        window_seconds = _parse_window_seconds(d.pop("window_seconds", UNSET))

        limit_use = cls(
            id=id,
            kind=kind,
            limit=limit,
            used=used,
            app=app,
            usage_subject=usage_subject,
            window_seconds=window_seconds,
        )

        limit_use.additional_properties = d
        return limit_use

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
