from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ClaimBody")


@_attrs_define
class ClaimBody:
    """A claim request.

    Attributes:
        max_ (int): 1..100.
        route (str): `local` or `external`: a `local_only` task never goes to an external worker.
        task_types (list[str]): Registered task types to take, 1..100 of them.
        worker_id (str): The worker's own name, 1..200 bytes (recorded on the task).
        wait_seconds (int | None | Unset): Long-poll up to this many seconds (0..30) while nothing is claimable.
    """

    max_: int
    route: str
    task_types: list[str]
    worker_id: str
    wait_seconds: int | None | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        max_ = self.max_

        route = self.route

        task_types = self.task_types

        worker_id = self.worker_id

        wait_seconds: int | None | Unset
        if isinstance(self.wait_seconds, Unset):
            wait_seconds = UNSET
        else:
            wait_seconds = self.wait_seconds

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "max": max_,
                "route": route,
                "task_types": task_types,
                "worker_id": worker_id,
            }
        )
        if wait_seconds is not UNSET:
            field_dict["wait_seconds"] = wait_seconds

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        max_ = d.pop("max")

        route = d.pop("route")

        task_types = cast(list[str], d.pop("task_types"))

        worker_id = d.pop("worker_id")

        def _parse_wait_seconds(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        wait_seconds = _parse_wait_seconds(d.pop("wait_seconds", UNSET))

        claim_body = cls(
            max_=max_,
            route=route,
            task_types=task_types,
            worker_id=worker_id,
            wait_seconds=wait_seconds,
        )

        return claim_body
