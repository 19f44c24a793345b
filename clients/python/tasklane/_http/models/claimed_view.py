from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ClaimedView")


@_attrs_define
class ClaimedView:
    """A claimed task: everything needed to run one attempt and fence its writes.

    Attributes:
        attempt (int):
        attempt_deadline_at (datetime.datetime): The server ends the attempt as `attempt_timeout` at this time whatever
            the
            worker says (claim time + the type's attempt timeout); a later `complete` is
            refused with 409 `lease_lost`. The lease never runs past it.
        id (UUID):
        input_ (Any):
        lease_expires_at (datetime.datetime):
        lease_token (UUID): The fencing token: every later write of this attempt carries it.
        task_type (str):
        deadline_at (datetime.datetime | None | Unset):
        snapshot (Any | Unset): The last snapshot of a resumed task.
        traceparent (None | str | Unset): W3C trace context of this claim, in the trace of the task's submit: a worker
            that starts its spans as its children continues the submitter's trace.
    """

    attempt: int
    attempt_deadline_at: datetime.datetime
    id: UUID
    input_: Any
    lease_expires_at: datetime.datetime
    lease_token: UUID
    task_type: str
    deadline_at: datetime.datetime | None | Unset = UNSET
    snapshot: Any | Unset = UNSET
    traceparent: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        attempt = self.attempt

        attempt_deadline_at = self.attempt_deadline_at.isoformat()

        id = str(self.id)

        input_ = self.input_

        lease_expires_at = self.lease_expires_at.isoformat()

        lease_token = str(self.lease_token)

        task_type = self.task_type

        deadline_at: None | str | Unset
        if isinstance(self.deadline_at, Unset):
            deadline_at = UNSET
        elif isinstance(self.deadline_at, datetime.datetime):
            deadline_at = self.deadline_at.isoformat()
        else:
            deadline_at = self.deadline_at

        snapshot = self.snapshot

        traceparent: None | str | Unset
        if isinstance(self.traceparent, Unset):
            traceparent = UNSET
        else:
            traceparent = self.traceparent

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempt": attempt,
                "attempt_deadline_at": attempt_deadline_at,
                "id": id,
                "input": input_,
                "lease_expires_at": lease_expires_at,
                "lease_token": lease_token,
                "task_type": task_type,
            }
        )
        if deadline_at is not UNSET:
            field_dict["deadline_at"] = deadline_at
        if snapshot is not UNSET:
            field_dict["snapshot"] = snapshot
        if traceparent is not UNSET:
            field_dict["traceparent"] = traceparent

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        attempt = d.pop("attempt")

        attempt_deadline_at = datetime.datetime.fromisoformat(
            d.pop("attempt_deadline_at")
        )

        id = UUID(d.pop("id"))

        input_ = d.pop("input")

        lease_expires_at = datetime.datetime.fromisoformat(d.pop("lease_expires_at"))

        lease_token = UUID(d.pop("lease_token"))

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

        snapshot = d.pop("snapshot", UNSET)

        def _parse_traceparent(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        traceparent = _parse_traceparent(d.pop("traceparent", UNSET))

        claimed_view = cls(
            attempt=attempt,
            attempt_deadline_at=attempt_deadline_at,
            id=id,
            input_=input_,
            lease_expires_at=lease_expires_at,
            lease_token=lease_token,
            task_type=task_type,
            deadline_at=deadline_at,
            snapshot=snapshot,
            traceparent=traceparent,
        )

        claimed_view.additional_properties = d
        return claimed_view

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
