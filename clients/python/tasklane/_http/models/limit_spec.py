from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..models.limit_kind import LimitKind, check_limit_kind
from ..types import UNSET, Unset

T = TypeVar("T", bound="LimitSpec")


@_attrs_define
class LimitSpec:
    """The body of `PUT /v1/admin/limits`. No app: global. A subject belongs to an app.
    For budgets, the app alone is its background budget (tasks without a subject).

        Attributes:
            kind (LimitKind): Kinds of admission limits.
            limit (int):
            app (None | str | Unset):
            usage_subject (None | str | Unset):
            window_seconds (int | None | Unset):
    """

    kind: LimitKind
    limit: int
    app: None | str | Unset = UNSET
    usage_subject: None | str | Unset = UNSET
    window_seconds: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        kind: str = self.kind

        limit = self.limit

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

        field_dict.update(
            {
                "kind": kind,
                "limit": limit,
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
        kind = check_limit_kind(d.pop("kind"))

        limit = d.pop("limit")

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

        limit_spec = cls(
            kind=kind,
            limit=limit,
            app=app,
            usage_subject=usage_subject,
            window_seconds=window_seconds,
        )

        return limit_spec
