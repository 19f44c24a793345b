from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="WebhookBody")


@_attrs_define
class WebhookBody:
    """Body of `PUT /v1/webhooks/{name}`.

    Attributes:
        events (list[str]): Which terminal events to send: `task.succeeded`, `task.failed`, `task.cancelled`.
        url (str): Where notifications are POSTed: an absolute http or https URL (≤ 2048 bytes).
        secret (None | str | Unset): Your own signing secret (`whsec_` + base64 of 24..64 bytes); one is generated
            at creation when absent. Given on an update, it becomes the current secret and
            the previous one signs for 24 h more.
    """

    events: list[str]
    url: str
    secret: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        events = self.events

        url = self.url

        secret: None | str | Unset
        if isinstance(self.secret, Unset):
            secret = UNSET
        else:
            secret = self.secret

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "events": events,
                "url": url,
            }
        )
        if secret is not UNSET:
            field_dict["secret"] = secret

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        events = cast(list[str], d.pop("events"))

        url = d.pop("url")

        def _parse_secret(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        secret = _parse_secret(d.pop("secret", UNSET))

        webhook_body = cls(
            events=events,
            url=url,
            secret=secret,
        )

        return webhook_body
