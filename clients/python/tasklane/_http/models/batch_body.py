from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

if TYPE_CHECKING:
    from ..models.submit_body import SubmitBody


T = TypeVar("T", bound="BatchBody")


@_attrs_define
class BatchBody:
    """Body of `POST /v1/tasks/batch`.

    Attributes:
        tasks (list[SubmitBody]): 1..1000 submit bodies, each as `POST /v1/tasks` takes it. Kept raw until each is
            read on its own, so an item is read exactly as a single submit's body would be
            (a repeated key included) and one bad item refuses only itself.
    """

    tasks: list[SubmitBody]

    def to_dict(self) -> dict[str, Any]:
        tasks = []
        for tasks_item_data in self.tasks:
            tasks_item = tasks_item_data.to_dict()
            tasks.append(tasks_item)

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "tasks": tasks,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.submit_body import SubmitBody

        d = dict(src_dict)
        tasks = []
        _tasks = d.pop("tasks")
        for tasks_item_data in _tasks:
            tasks_item = SubmitBody.from_dict(tasks_item_data)

            tasks.append(tasks_item)

        batch_body = cls(
            tasks=tasks,
        )

        return batch_body
