from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="WebhooksOverview")


@_attrs_define
class WebhooksOverview:
    """The webhooks line of the admin overview.

    Attributes:
        disabled_endpoints (int): Disabled after a 410 (until the app PUTs them again).
        endpoints (int):
        failed (int): Notifications that ran out of attempts, still in the log.
        oldest_pending_seconds (int): Age of the oldest pending notification, in seconds (0 when none).
        pending (int): Notifications not yet delivered.
    """

    disabled_endpoints: int
    endpoints: int
    failed: int
    oldest_pending_seconds: int
    pending: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        disabled_endpoints = self.disabled_endpoints

        endpoints = self.endpoints

        failed = self.failed

        oldest_pending_seconds = self.oldest_pending_seconds

        pending = self.pending

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "disabled_endpoints": disabled_endpoints,
                "endpoints": endpoints,
                "failed": failed,
                "oldest_pending_seconds": oldest_pending_seconds,
                "pending": pending,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        disabled_endpoints = d.pop("disabled_endpoints")

        endpoints = d.pop("endpoints")

        failed = d.pop("failed")

        oldest_pending_seconds = d.pop("oldest_pending_seconds")

        pending = d.pop("pending")

        webhooks_overview = cls(
            disabled_endpoints=disabled_endpoints,
            endpoints=endpoints,
            failed=failed,
            oldest_pending_seconds=oldest_pending_seconds,
            pending=pending,
        )

        webhooks_overview.additional_properties = d
        return webhooks_overview

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
