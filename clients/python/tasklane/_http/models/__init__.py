"""Contains all the data models used in inputs/outputs"""

from .activity import Activity
from .activity_minute import ActivityMinute
from .app_list import AppList
from .app_weight import AppWeight
from .attempt_list import AttemptList
from .attempt_view import AttemptView
from .batch_answer import BatchAnswer
from .batch_body import BatchBody
from .batch_item import BatchItem
from .beat_view import BeatView
from .cancelled_body import CancelledBody
from .circuit import Circuit
from .circuit_list import CircuitList
from .claim_answer import ClaimAnswer
from .claim_body import ClaimBody
from .claimed_view import ClaimedView
from .complete_body import CompleteBody
from .complete_item import CompleteItem
from .complete_item_answer import CompleteItemAnswer
from .complete_many_answer import CompleteManyAnswer
from .complete_many_body import CompleteManyBody
from .deleted import Deleted
from .delivery_list import DeliveryList
from .delivery_view import DeliveryView
from .emergency_stop import EmergencyStop
from .emergency_stop_spec import EmergencyStopSpec
from .endpoint_list import EndpointList
from .endpoint_view import EndpointView
from .error_view import ErrorView
from .event_page import EventPage
from .event_view import EventView
from .fail_body import FailBody
from .fallback_body import FallbackBody
from .heartbeat_body import HeartbeatBody
from .heartbeat_item import HeartbeatItem
from .heartbeat_item_answer import HeartbeatItemAnswer
from .heartbeats_answer import HeartbeatsAnswer
from .heartbeats_body import HeartbeatsBody
from .limit_kind import LimitKind
from .limit_set import LimitSet
from .limit_spec import LimitSpec
from .limit_use import LimitUse
from .links import Links
from .live_replica import LiveReplica
from .output_body import OutputBody
from .output_delta import OutputDelta
from .output_item_answer import OutputItemAnswer
from .output_item_body import OutputItemBody
from .outputs_answer import OutputsAnswer
from .outputs_body import OutputsBody
from .overview import Overview
from .pause_body import PauseBody
from .paused_type import PausedType
from .problem import Problem
from .provenance import Provenance
from .provenance_body import ProvenanceBody
from .queue_depth import QueueDepth
from .refusal_count import RefusalCount
from .release_body import ReleaseBody
from .released import Released
from .resource_body import ResourceBody
from .resource_set import ResourceSet
from .resource_use import ResourceUse
from .settled import Settled
from .source_item import SourceItem
from .source_page import SourcePage
from .status import Status
from .submit_body import SubmitBody
from .task_page import TaskPage
from .task_view import TaskView
from .type_paused import TypePaused
from .usage_body import UsageBody
from .usage_view import UsageView
from .webhook_body import WebhookBody
from .webhooks_overview import WebhooksOverview
from .weight_body import WeightBody
from .weight_set import WeightSet
from .whoami import Whoami
from .worker_event import WorkerEvent

__all__ = (
    "Activity",
    "ActivityMinute",
    "AppList",
    "AppWeight",
    "AttemptList",
    "AttemptView",
    "BatchAnswer",
    "BatchBody",
    "BatchItem",
    "BeatView",
    "CancelledBody",
    "Circuit",
    "CircuitList",
    "ClaimAnswer",
    "ClaimBody",
    "ClaimedView",
    "CompleteBody",
    "CompleteItem",
    "CompleteItemAnswer",
    "CompleteManyAnswer",
    "CompleteManyBody",
    "Deleted",
    "DeliveryList",
    "DeliveryView",
    "EmergencyStop",
    "EmergencyStopSpec",
    "EndpointList",
    "EndpointView",
    "ErrorView",
    "EventPage",
    "EventView",
    "FailBody",
    "FallbackBody",
    "HeartbeatBody",
    "HeartbeatItem",
    "HeartbeatItemAnswer",
    "HeartbeatsAnswer",
    "HeartbeatsBody",
    "LimitKind",
    "LimitSet",
    "LimitSpec",
    "LimitUse",
    "Links",
    "LiveReplica",
    "OutputBody",
    "OutputDelta",
    "OutputItemAnswer",
    "OutputItemBody",
    "OutputsAnswer",
    "OutputsBody",
    "Overview",
    "PauseBody",
    "PausedType",
    "Problem",
    "Provenance",
    "ProvenanceBody",
    "QueueDepth",
    "RefusalCount",
    "ReleaseBody",
    "Released",
    "ResourceBody",
    "ResourceSet",
    "ResourceUse",
    "Settled",
    "SourceItem",
    "SourcePage",
    "Status",
    "SubmitBody",
    "TaskPage",
    "TaskView",
    "TypePaused",
    "UsageBody",
    "UsageView",
    "WebhookBody",
    "WebhooksOverview",
    "WeightBody",
    "WeightSet",
    "Whoami",
    "WorkerEvent",
)
