from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="EndpointView")


@_attrs_define
class EndpointView:
    """An endpoint. `secret` only in the answer that created or rotated it.

    Attributes:
        created_at (datetime.datetime):
        disabled (bool): True after a receiver answered 410; a PUT enables it again.
        events (list[str]):
        name (str):
        url (str):
        secret (None | str | Unset):
    """

    created_at: datetime.datetime
    disabled: bool
    events: list[str]
    name: str
    url: str
    secret: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        disabled = self.disabled

        events = self.events

        name = self.name

        url = self.url

        secret: None | str | Unset
        if isinstance(self.secret, Unset):
            secret = UNSET
        else:
            secret = self.secret

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "disabled": disabled,
                "events": events,
                "name": name,
                "url": url,
            }
        )
        if secret is not UNSET:
            field_dict["secret"] = secret

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        disabled = d.pop("disabled")

        events = cast(list[str], d.pop("events"))

        name = d.pop("name")

        url = d.pop("url")

        def _parse_secret(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        secret = _parse_secret(d.pop("secret", UNSET))

        endpoint_view = cls(
            created_at=created_at,
            disabled=disabled,
            events=events,
            name=name,
            url=url,
            secret=secret,
        )

        endpoint_view.additional_properties = d
        return endpoint_view

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
