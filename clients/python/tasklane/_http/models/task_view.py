from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.error_view import ErrorView
    from ..models.links import Links
    from ..models.provenance import Provenance
    from ..models.usage_view import UsageView


T = TypeVar("T", bound="TaskView")


@_attrs_define
class TaskView:
    """A task as its owner sees it.

    Attributes:
        attempt (int):
        created_at (datetime.datetime):
        id (UUID):
        links (Links):
        max_attempts (int):
        priority (int):
        scope_id (str):
        state (str):
        task_type (str):
        deadline_at (datetime.datetime | None | Unset):
        error (ErrorView | None | Unset):
        finished_at (datetime.datetime | None | Unset):
        phase (None | str | Unset):
        progress (int | None | Unset):
        provenance (None | Provenance | Unset):
        released_at (datetime.datetime | None | Unset):
        result (Any | Unset):
        source_id (None | str | Unset):
        started_at (datetime.datetime | None | Unset):
        usage (None | Unset | UsageView):
        usage_subject (None | str | Unset): Absent for scope tokens.
    """

    attempt: int
    created_at: datetime.datetime
    id: UUID
    links: Links
    max_attempts: int
    priority: int
    scope_id: str
    state: str
    task_type: str
    deadline_at: datetime.datetime | None | Unset = UNSET
    error: ErrorView | None | Unset = UNSET
    finished_at: datetime.datetime | None | Unset = UNSET
    phase: None | str | Unset = UNSET
    progress: int | None | Unset = UNSET
    provenance: None | Provenance | Unset = UNSET
    released_at: datetime.datetime | None | Unset = UNSET
    result: Any | Unset = UNSET
    source_id: None | str | Unset = UNSET
    started_at: datetime.datetime | None | Unset = UNSET
    usage: None | Unset | UsageView = UNSET
    usage_subject: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.error_view import ErrorView
        from ..models.provenance import Provenance
        from ..models.usage_view import UsageView

        attempt = self.attempt

        created_at = self.created_at.isoformat()

        id = str(self.id)

        links = self.links.to_dict()

        max_attempts = self.max_attempts

        priority = self.priority

        scope_id = self.scope_id

        state = self.state

        task_type = self.task_type

        deadline_at: None | str | Unset
        if isinstance(self.deadline_at, Unset):
            deadline_at = UNSET
        elif isinstance(self.deadline_at, datetime.datetime):
            deadline_at = self.deadline_at.isoformat()
        else:
            deadline_at = self.deadline_at

        error: dict[str, Any] | None | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        elif isinstance(self.error, ErrorView):
            error = self.error.to_dict()
        else:
            error = self.error

        finished_at: None | str | Unset
        if isinstance(self.finished_at, Unset):
            finished_at = UNSET
        elif isinstance(self.finished_at, datetime.datetime):
            finished_at = self.finished_at.isoformat()
        else:
            finished_at = self.finished_at

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

        provenance: dict[str, Any] | None | Unset
        if isinstance(self.provenance, Unset):
            provenance = UNSET
        elif isinstance(self.provenance, Provenance):
            provenance = self.provenance.to_dict()
        else:
            provenance = self.provenance

        released_at: None | str | Unset
        if isinstance(self.released_at, Unset):
            released_at = UNSET
        elif isinstance(self.released_at, datetime.datetime):
            released_at = self.released_at.isoformat()
        else:
            released_at = self.released_at

        result = self.result

        source_id: None | str | Unset
        if isinstance(self.source_id, Unset):
            source_id = UNSET
        else:
            source_id = self.source_id

        started_at: None | str | Unset
        if isinstance(self.started_at, Unset):
            started_at = UNSET
        elif isinstance(self.started_at, datetime.datetime):
            started_at = self.started_at.isoformat()
        else:
            started_at = self.started_at

        usage: dict[str, Any] | None | Unset
        if isinstance(self.usage, Unset):
            usage = UNSET
        elif isinstance(self.usage, UsageView):
            usage = self.usage.to_dict()
        else:
            usage = self.usage

        usage_subject: None | str | Unset
        if isinstance(self.usage_subject, Unset):
            usage_subject = UNSET
        else:
            usage_subject = self.usage_subject

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempt": attempt,
                "created_at": created_at,
                "id": id,
                "links": links,
                "max_attempts": max_attempts,
                "priority": priority,
                "scope_id": scope_id,
                "state": state,
                "task_type": task_type,
            }
        )
        if deadline_at is not UNSET:
            field_dict["deadline_at"] = deadline_at
        if error is not UNSET:
            field_dict["error"] = error
        if finished_at is not UNSET:
            field_dict["finished_at"] = finished_at
        if phase is not UNSET:
            field_dict["phase"] = phase
        if progress is not UNSET:
            field_dict["progress"] = progress
        if provenance is not UNSET:
            field_dict["provenance"] = provenance
        if released_at is not UNSET:
            field_dict["released_at"] = released_at
        if result is not UNSET:
            field_dict["result"] = result
        if source_id is not UNSET:
            field_dict["source_id"] = source_id
        if started_at is not UNSET:
            field_dict["started_at"] = started_at
        if usage is not UNSET:
            field_dict["usage"] = usage
        if usage_subject is not UNSET:
            field_dict["usage_subject"] = usage_subject

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.error_view import ErrorView
        from ..models.links import Links
        from ..models.provenance import Provenance
        from ..models.usage_view import UsageView

        d = dict(src_dict)
        attempt = d.pop("attempt")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        id = UUID(d.pop("id"))

        links = Links.from_dict(d.pop("links"))

        max_attempts = d.pop("max_attempts")

        priority = d.pop("priority")

        scope_id = d.pop("scope_id")

        state = d.pop("state")

        task_type = d.pop("task_type")

        def _parse_deadline_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                deadline_at_type_0 = datetime.datetime.fromisoformat(data)

                return deadline_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        deadline_at = _parse_deadline_at(d.pop("deadline_at", UNSET))

        def _parse_error(data: object) -> ErrorView | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                error_type_0 = ErrorView.from_dict(data)

                return error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ErrorView | None | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_finished_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                finished_at_type_0 = datetime.datetime.fromisoformat(data)

                return finished_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        finished_at = _parse_finished_at(d.pop("finished_at", UNSET))

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

        def _parse_provenance(data: object) -> None | Provenance | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                provenance_type_0 = Provenance.from_dict(data)

                return provenance_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Provenance | Unset, data)

        provenance = _parse_provenance(d.pop("provenance", UNSET))

        def _parse_released_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                released_at_type_0 = datetime.datetime.fromisoformat(data)

                return released_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        released_at = _parse_released_at(d.pop("released_at", UNSET))

        result = d.pop("result", UNSET)

        def _parse_source_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        source_id = _parse_source_id(d.pop("source_id", UNSET))

        def _parse_started_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                started_at_type_0 = datetime.datetime.fromisoformat(data)

                return started_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        started_at = _parse_started_at(d.pop("started_at", UNSET))

        def _parse_usage(data: object) -> None | Unset | UsageView:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                usage_type_0 = UsageView.from_dict(data)

                return usage_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UsageView, data)

        usage = _parse_usage(d.pop("usage", UNSET))

        def _parse_usage_subject(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        usage_subject = _parse_usage_subject(d.pop("usage_subject", UNSET))

        task_view = cls(
            attempt=attempt,
            created_at=created_at,
            id=id,
            links=links,
            max_attempts=max_attempts,
            priority=priority,
            scope_id=scope_id,
            state=state,
            task_type=task_type,
            deadline_at=deadline_at,
            error=error,
            finished_at=finished_at,
            phase=phase,
            progress=progress,
            provenance=provenance,
            released_at=released_at,
            result=result,
            source_id=source_id,
            started_at=started_at,
            usage=usage,
            usage_subject=usage_subject,
        )

        task_view.additional_properties = d
        return task_view

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
