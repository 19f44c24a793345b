from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.error_view import ErrorView
    from ..models.usage_view import UsageView


T = TypeVar("T", bound="AttemptView")


@_attrs_define
class AttemptView:
    """One attempt of a task.

    Attributes:
        attempt (int): 1-based over the task's whole life (an owner's retry keeps counting).
        outcome (str): `running`, `succeeded`, `retry`, `fallback`, `failed`, `cancelled`, `lost` (lease
            expired or replica gone) or `timed_out`.
        started_at (datetime.datetime):
        error (ErrorView | None | Unset):
        finished_at (datetime.datetime | None | Unset): Null while running.
        model (None | str | Unset): Absent for scope tokens.
        provider (None | str | Unset): Absent for scope tokens.
        response_model (None | str | Unset): The model the provider says answered (often a dated snapshot of `model`),
            null
            when its answer named none; absent for scope tokens.
        route (None | str | Unset): `local` or `external`; absent for scope tokens.
        route_name (None | str | Unset): Absent for scope tokens.
        system_fingerprint (None | str | Unset): The provider's `system_fingerprint`, null when it gave none; absent for
            scope
            tokens.
        usage (None | Unset | UsageView):
    """

    attempt: int
    outcome: str
    started_at: datetime.datetime
    error: ErrorView | None | Unset = UNSET
    finished_at: datetime.datetime | None | Unset = UNSET
    model: None | str | Unset = UNSET
    provider: None | str | Unset = UNSET
    response_model: None | str | Unset = UNSET
    route: None | str | Unset = UNSET
    route_name: None | str | Unset = UNSET
    system_fingerprint: None | str | Unset = UNSET
    usage: None | Unset | UsageView = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.error_view import ErrorView
        from ..models.usage_view import UsageView

        attempt = self.attempt

        outcome = self.outcome

        started_at = self.started_at.isoformat()

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

        model: None | str | Unset
        if isinstance(self.model, Unset):
            model = UNSET
        else:
            model = self.model

        provider: None | str | Unset
        if isinstance(self.provider, Unset):
            provider = UNSET
        else:
            provider = self.provider

        response_model: None | str | Unset
        if isinstance(self.response_model, Unset):
            response_model = UNSET
        else:
            response_model = self.response_model

        route: None | str | Unset
        if isinstance(self.route, Unset):
            route = UNSET
        else:
            route = self.route

        route_name: None | str | Unset
        if isinstance(self.route_name, Unset):
            route_name = UNSET
        else:
            route_name = self.route_name

        system_fingerprint: None | str | Unset
        if isinstance(self.system_fingerprint, Unset):
            system_fingerprint = UNSET
        else:
            system_fingerprint = self.system_fingerprint

        usage: dict[str, Any] | None | Unset
        if isinstance(self.usage, Unset):
            usage = UNSET
        elif isinstance(self.usage, UsageView):
            usage = self.usage.to_dict()
        else:
            usage = self.usage

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "attempt": attempt,
                "outcome": outcome,
                "started_at": started_at,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error
        if finished_at is not UNSET:
            field_dict["finished_at"] = finished_at
        if model is not UNSET:
            field_dict["model"] = model
        if provider is not UNSET:
            field_dict["provider"] = provider
        if response_model is not UNSET:
            field_dict["response_model"] = response_model
        if route is not UNSET:
            field_dict["route"] = route
        if route_name is not UNSET:
            field_dict["route_name"] = route_name
        if system_fingerprint is not UNSET:
            field_dict["system_fingerprint"] = system_fingerprint
        if usage is not UNSET:
            field_dict["usage"] = usage

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.error_view import ErrorView
        from ..models.usage_view import UsageView

        d = dict(src_dict)
        attempt = d.pop("attempt")

        outcome = d.pop("outcome")

        started_at = datetime.datetime.fromisoformat(d.pop("started_at"))

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

        def _parse_model(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        model = _parse_model(d.pop("model", UNSET))

        def _parse_provider(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        provider = _parse_provider(d.pop("provider", UNSET))

        def _parse_response_model(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        response_model = _parse_response_model(d.pop("response_model", UNSET))

        def _parse_route(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        route = _parse_route(d.pop("route", UNSET))

        def _parse_route_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        route_name = _parse_route_name(d.pop("route_name", UNSET))

        def _parse_system_fingerprint(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        system_fingerprint = _parse_system_fingerprint(
            d.pop("system_fingerprint", UNSET)
        )

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

        attempt_view = cls(
            attempt=attempt,
            outcome=outcome,
            started_at=started_at,
            error=error,
            finished_at=finished_at,
            model=model,
            provider=provider,
            response_model=response_model,
            route=route,
            route_name=route_name,
            system_fingerprint=system_fingerprint,
            usage=usage,
        )

        attempt_view.additional_properties = d
        return attempt_view

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
