from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.circuit import Circuit
    from ..models.emergency_stop import EmergencyStop
    from ..models.limit_use import LimitUse
    from ..models.live_replica import LiveReplica
    from ..models.paused_type import PausedType
    from ..models.queue_depth import QueueDepth
    from ..models.refusal_count import RefusalCount
    from ..models.resource_use import ResourceUse
    from ..models.webhooks_overview import WebhooksOverview


T = TypeVar("T", bound="Overview")


@_attrs_define
class Overview:
    """
    Attributes:
        circuits (list[Circuit]): Circuit breakers that counted a failure since their last reset (a route not
            listed is closed).
        emergency_stops (list[EmergencyStop]):
        limits (list[LimitUse]):
        paused_task_types (list[PausedType]):
        queue (list[QueueDepth]):
        refusals_today (list[RefusalCount]):
        replicas (list[LiveReplica]):
        resources (list[ResourceUse]):
        webhooks (WebhooksOverview): The webhooks line of the admin overview.
    """

    circuits: list[Circuit]
    emergency_stops: list[EmergencyStop]
    limits: list[LimitUse]
    paused_task_types: list[PausedType]
    queue: list[QueueDepth]
    refusals_today: list[RefusalCount]
    replicas: list[LiveReplica]
    resources: list[ResourceUse]
    webhooks: WebhooksOverview
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        circuits = []
        for circuits_item_data in self.circuits:
            circuits_item = circuits_item_data.to_dict()
            circuits.append(circuits_item)

        emergency_stops = []
        for emergency_stops_item_data in self.emergency_stops:
            emergency_stops_item = emergency_stops_item_data.to_dict()
            emergency_stops.append(emergency_stops_item)

        limits = []
        for limits_item_data in self.limits:
            limits_item = limits_item_data.to_dict()
            limits.append(limits_item)

        paused_task_types = []
        for paused_task_types_item_data in self.paused_task_types:
            paused_task_types_item = paused_task_types_item_data.to_dict()
            paused_task_types.append(paused_task_types_item)

        queue = []
        for queue_item_data in self.queue:
            queue_item = queue_item_data.to_dict()
            queue.append(queue_item)

        refusals_today = []
        for refusals_today_item_data in self.refusals_today:
            refusals_today_item = refusals_today_item_data.to_dict()
            refusals_today.append(refusals_today_item)

        replicas = []
        for replicas_item_data in self.replicas:
            replicas_item = replicas_item_data.to_dict()
            replicas.append(replicas_item)

        resources = []
        for resources_item_data in self.resources:
            resources_item = resources_item_data.to_dict()
            resources.append(resources_item)

        webhooks = self.webhooks.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "circuits": circuits,
                "emergency_stops": emergency_stops,
                "limits": limits,
                "paused_task_types": paused_task_types,
                "queue": queue,
                "refusals_today": refusals_today,
                "replicas": replicas,
                "resources": resources,
                "webhooks": webhooks,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.circuit import Circuit
        from ..models.emergency_stop import EmergencyStop
        from ..models.limit_use import LimitUse
        from ..models.live_replica import LiveReplica
        from ..models.paused_type import PausedType
        from ..models.queue_depth import QueueDepth
        from ..models.refusal_count import RefusalCount
        from ..models.resource_use import ResourceUse
        from ..models.webhooks_overview import WebhooksOverview

        d = dict(src_dict)
        circuits = []
        _circuits = d.pop("circuits")
        for circuits_item_data in _circuits:
            circuits_item = Circuit.from_dict(circuits_item_data)

            circuits.append(circuits_item)

        emergency_stops = []
        _emergency_stops = d.pop("emergency_stops")
        for emergency_stops_item_data in _emergency_stops:
            emergency_stops_item = EmergencyStop.from_dict(emergency_stops_item_data)

            emergency_stops.append(emergency_stops_item)

        limits = []
        _limits = d.pop("limits")
        for limits_item_data in _limits:
            limits_item = LimitUse.from_dict(limits_item_data)

            limits.append(limits_item)

        paused_task_types = []
        _paused_task_types = d.pop("paused_task_types")
        for paused_task_types_item_data in _paused_task_types:
            paused_task_types_item = PausedType.from_dict(paused_task_types_item_data)

            paused_task_types.append(paused_task_types_item)

        queue = []
        _queue = d.pop("queue")
        for queue_item_data in _queue:
            queue_item = QueueDepth.from_dict(queue_item_data)

            queue.append(queue_item)

        refusals_today = []
        _refusals_today = d.pop("refusals_today")
        for refusals_today_item_data in _refusals_today:
            refusals_today_item = RefusalCount.from_dict(refusals_today_item_data)

            refusals_today.append(refusals_today_item)

        replicas = []
        _replicas = d.pop("replicas")
        for replicas_item_data in _replicas:
            replicas_item = LiveReplica.from_dict(replicas_item_data)

            replicas.append(replicas_item)

        resources = []
        _resources = d.pop("resources")
        for resources_item_data in _resources:
            resources_item = ResourceUse.from_dict(resources_item_data)

            resources.append(resources_item)

        webhooks = WebhooksOverview.from_dict(d.pop("webhooks"))

        overview = cls(
            circuits=circuits,
            emergency_stops=emergency_stops,
            limits=limits,
            paused_task_types=paused_task_types,
            queue=queue,
            refusals_today=refusals_today,
            replicas=replicas,
            resources=resources,
            webhooks=webhooks,
        )

        overview.additional_properties = d
        return overview

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
