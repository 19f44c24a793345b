from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.worker_event import WorkerEvent


T = TypeVar("T", bound="HeartbeatBody")


@_attrs_define
class HeartbeatBody:
    """
    Attributes:
        lease_token (UUID):
        events (list[WorkerEvent] | None | Unset): At most 100.
        output (None | str | Unset): Text to append to the attempt's live output (at most 64 KiB), as
            `POST /v1/worker/tasks/{id}/output` does.
        phase (None | str | Unset): `loading` or `running`.
        progress (int | None | Unset): 0..100.
        snapshot (Any | Unset): A resume snapshot, at most 1 MiB.
    """

    lease_token: UUID
    events: list[WorkerEvent] | None | Unset = UNSET
    output: None | str | Unset = UNSET
    phase: None | str | Unset = UNSET
    progress: int | None | Unset = UNSET
    snapshot: Any | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        lease_token = str(self.lease_token)

        events: list[dict[str, Any]] | None | Unset
        if isinstance(self.events, Unset):
            events = UNSET
        elif isinstance(self.events, list):
            events = []
            for events_type_0_item_data in self.events:
                events_type_0_item = events_type_0_item_data.to_dict()
                events.append(events_type_0_item)

        else:
            events = self.events

        output: None | str | Unset
        if isinstance(self.output, Unset):
            output = UNSET
        else:
            output = self.output

        phase: None | str | Unset
        if isinstance(self.phase, Unset):
            phase = UNSET
        else:
            phase = self.phase

        progress: int | None | Unset
        if isinstance(self.progress, Unset):
            progress = UNSET
        else:
            progress = self.progress

        snapshot = self.snapshot

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "lease_token": lease_token,
            }
        )
        if events is not UNSET:
            field_dict["events"] = events
        if output is not UNSET:
            field_dict["output"] = output
        if phase is not UNSET:
            field_dict["phase"] = phase
        if progress is not UNSET:
            field_dict["progress"] = progress
        if snapshot is not UNSET:
            field_dict["snapshot"] = snapshot

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.worker_event import WorkerEvent

        d = dict(src_dict)
        lease_token = UUID(d.pop("lease_token"))

        def _parse_events(data: object) -> list[WorkerEvent] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                events_type_0 = []
                _events_type_0 = data
                for events_type_0_item_data in _events_type_0:
                    events_type_0_item = WorkerEvent.from_dict(events_type_0_item_data)

                    events_type_0.append(events_type_0_item)

                return events_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[WorkerEvent] | None | Unset, data)

        events = _parse_events(d.pop("events", UNSET))

        def _parse_output(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        output = _parse_output(d.pop("output", UNSET))

        def _parse_phase(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        phase = _parse_phase(d.pop("phase", UNSET))

        def _parse_progress(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        progress = _parse_progress(d.pop("progress", UNSET))

        snapshot = d.pop("snapshot", UNSET)

        heartbeat_body = cls(
            lease_token=lease_token,
            events=events,
            output=output,
            phase=phase,
            progress=progress,
            snapshot=snapshot,
        )

        return heartbeat_body
