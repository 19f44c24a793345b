from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ProvenanceBody")


@_attrs_define
class ProvenanceBody:
    """Where the attempt ran. Names are 1..200 bytes.

    Attributes:
        model (None | str | Unset):
        provider (None | str | Unset):
        route (None | str | Unset): Informational (`local` or `external`): the route is the one the claim recorded.
        route_name (None | str | Unset): The configured route's name (it names its circuit breaker).
    """

    model: None | str | Unset = UNSET
    provider: None | str | Unset = UNSET
    route: None | str | Unset = UNSET
    route_name: None | str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
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

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if model is not UNSET:
            field_dict["model"] = model
        if provider is not UNSET:
            field_dict["provider"] = provider
        if route is not UNSET:
            field_dict["route"] = route
        if route_name is not UNSET:
            field_dict["route_name"] = route_name

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)

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

        provenance_body = cls(
            model=model,
            provider=provider,
            route=route,
            route_name=route_name,
        )

        return provenance_body
