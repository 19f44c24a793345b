from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Provenance")


@_attrs_define
class Provenance:
    """Where an attempt ran.

    Attributes:
        model (None | str | Unset):
        provider (None | str | Unset):
        response_model (None | str | Unset): The model the provider says answered (often a dated snapshot of `model`).
        route (None | str | Unset): `local` or `external`: the locality of the worker that claimed the attempt.
        route_name (None | str | Unset): The configured route's name.
        system_fingerprint (None | str | Unset): The provider's `system_fingerprint`, when it gave one.
    """

    model: None | str | Unset = UNSET
    provider: None | str | Unset = UNSET
    response_model: None | str | Unset = UNSET
    route: None | str | Unset = UNSET
    route_name: None | str | Unset = UNSET
    system_fingerprint: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

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

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
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

        provenance = cls(
            model=model,
            provider=provider,
            response_model=response_model,
            route=route,
            route_name=route_name,
            system_fingerprint=system_fingerprint,
        )

        provenance.additional_properties = d
        return provenance

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
