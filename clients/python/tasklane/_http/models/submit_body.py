from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="SubmitBody")


@_attrs_define
class SubmitBody:
    """The submit body. Unknown fields are refused.

    Attributes:
        effect_key (str): The idempotency key, 1..200 bytes.
        input_ (Any): Any JSON value, bounded in size by the deployment.
        scope_id (str): 1..200 bytes.
        task_type (str): A registered task type.
        deadline_seconds (int | None | Unset): Queue deadline, 1..604800 seconds.
        max_attempts (int | None | Unset): 1..25.
        on_restart (None | str | Unset):
        priority (int | None | Unset): -100..100.
        privacy (None | str | Unset):
        source_id (None | str | Unset):
        usage_subject (None | str | Unset):
    """

    effect_key: str
    input_: Any
    scope_id: str
    task_type: str
    deadline_seconds: int | None | Unset = UNSET
    max_attempts: int | None | Unset = UNSET
    on_restart: None | str | Unset = UNSET
    priority: int | None | Unset = UNSET
    privacy: None | str | Unset = UNSET
    source_id: None | str | Unset = UNSET
    usage_subject: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        effect_key = self.effect_key

        input_ = self.input_

        scope_id = self.scope_id

        task_type = self.task_type

        deadline_seconds: int | None | Unset
        if isinstance(self.deadline_seconds, Unset):
            deadline_seconds = UNSET
        else:
            deadline_seconds = self.deadline_seconds

        max_attempts: int | None | Unset
        if isinstance(self.max_attempts, Unset):
            max_attempts = UNSET
        else:
            max_attempts = self.max_attempts

        on_restart: None | str | Unset
        if isinstance(self.on_restart, Unset):
            on_restart = UNSET
        else:
            on_restart = self.on_restart

        priority: int | None | Unset
        if isinstance(self.priority, Unset):
            priority = UNSET
        else:
            priority = self.priority

        privacy: None | str | Unset
        if isinstance(self.privacy, Unset):
            privacy = UNSET
        else:
            privacy = self.privacy

        source_id: None | str | Unset
        if isinstance(self.source_id, Unset):
            source_id = UNSET
        else:
            source_id = self.source_id

        usage_subject: None | str | Unset
        if isinstance(self.usage_subject, Unset):
            usage_subject = UNSET
        else:
            usage_subject = self.usage_subject

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "effect_key": effect_key,
                "input": input_,
                "scope_id": scope_id,
                "task_type": task_type,
            }
        )
        if deadline_seconds is not UNSET:
            field_dict["deadline_seconds"] = deadline_seconds
        if max_attempts is not UNSET:
            field_dict["max_attempts"] = max_attempts
        if on_restart is not UNSET:
            field_dict["on_restart"] = on_restart
        if priority is not UNSET:
            field_dict["priority"] = priority
        if privacy is not UNSET:
            field_dict["privacy"] = privacy
        if source_id is not UNSET:
            field_dict["source_id"] = source_id
        if usage_subject is not UNSET:
            field_dict["usage_subject"] = usage_subject

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        effect_key = d.pop("effect_key")

        input_ = d.pop("input")

        scope_id = d.pop("scope_id")

        task_type = d.pop("task_type")

        def _parse_deadline_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        deadline_seconds = _parse_deadline_seconds(d.pop("deadline_seconds", UNSET))

        def _parse_max_attempts(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_attempts = _parse_max_attempts(d.pop("max_attempts", UNSET))

        def _parse_on_restart(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        on_restart = _parse_on_restart(d.pop("on_restart", UNSET))

        def _parse_priority(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        priority = _parse_priority(d.pop("priority", UNSET))

        def _parse_privacy(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        privacy = _parse_privacy(d.pop("privacy", UNSET))

        def _parse_source_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        source_id = _parse_source_id(d.pop("source_id", UNSET))

        def _parse_usage_subject(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        usage_subject = _parse_usage_subject(d.pop("usage_subject", UNSET))

        submit_body = cls(
            effect_key=effect_key,
            input_=input_,
            scope_id=scope_id,
            task_type=task_type,
            deadline_seconds=deadline_seconds,
            max_attempts=max_attempts,
            on_restart=on_restart,
            priority=priority,
            privacy=privacy,
            source_id=source_id,
            usage_subject=usage_subject,
        )

        return submit_body
