from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="HeartbeatItem")


@_attrs_define
class HeartbeatItem:
    """One lease of a batched heartbeat, and what the worker reports with it.

    Attributes:
        id (UUID):
        lease_token (UUID):
        output (None | str | Unset): Text to append to the attempt's live output (at most 64 KiB).
        progress (int | None | Unset): 0..100.
        snapshot (Any | Unset): A resume snapshot, at most 1 MiB.
    """

    id: UUID
    lease_token: UUID
    output: None | str | Unset = UNSET
    progress: int | None | Unset = UNSET
    snapshot: Any | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        id = str(self.id)

        lease_token = str(self.lease_token)

        output: None | str | Unset
        if isinstance(self.output, Unset):
            output = UNSET
        else:
            output = self.output

        progress: int | None | Unset
        if isinstance(self.progress, Unset):
            progress = UNSET
        else:
            progress = self.progress

        snapshot = self.snapshot

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "id": id,
                "lease_token": lease_token,
            }
        )
        if output is not UNSET:
            field_dict["output"] = output
        if progress is not UNSET:
            field_dict["progress"] = progress
        if snapshot is not UNSET:
            field_dict["snapshot"] = snapshot

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = UUID(d.pop("id"))

        lease_token = UUID(d.pop("lease_token"))

        def _parse_output(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        output = _parse_output(d.pop("output", UNSET))

        def _parse_progress(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        progress = _parse_progress(d.pop("progress", UNSET))

        snapshot = d.pop("snapshot", UNSET)

        heartbeat_item = cls(
            id=id,
            lease_token=lease_token,
            output=output,
            progress=progress,
            snapshot=snapshot,
        )

        return heartbeat_item
