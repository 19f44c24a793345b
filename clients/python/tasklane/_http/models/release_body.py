from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ReleaseBody")


@_attrs_define
class ReleaseBody:
    """Body of `POST /v1/releases`: the identity of the task to release.

    Attributes:
        effect_key (str): 1..200 bytes.
        scope_id (str): 1..200 bytes.
        usage_subject (None | str | Unset): 1..200 bytes; absent is the "no subject" identity.
    """

    effect_key: str
    scope_id: str
    usage_subject: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        effect_key = self.effect_key

        scope_id = self.scope_id

        usage_subject: None | str | Unset
        if isinstance(self.usage_subject, Unset):
            usage_subject = UNSET
        else:
            usage_subject = self.usage_subject

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "effect_key": effect_key,
                "scope_id": scope_id,
            }
        )
        if usage_subject is not UNSET:
            field_dict["usage_subject"] = usage_subject

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        effect_key = d.pop("effect_key")

        scope_id = d.pop("scope_id")

        def _parse_usage_subject(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        usage_subject = _parse_usage_subject(d.pop("usage_subject", UNSET))

        release_body = cls(
            effect_key=effect_key,
            scope_id=scope_id,
            usage_subject=usage_subject,
        )

        return release_body
