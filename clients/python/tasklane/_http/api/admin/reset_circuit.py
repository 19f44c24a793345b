from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.circuit import Circuit
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    route_name: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/admin/circuits/{route_name}/reset".format(
            route_name=quote(str(route_name), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Circuit | Problem | None:
    if response.status_code == 200:
        response_200 = Circuit.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())

        return response_404

    if response.status_code == 500:
        response_500 = Problem.from_dict(response.json())

        return response_500

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Circuit | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    route_name: str,
    *,
    client: AuthenticatedClient,
) -> Response[Circuit | Problem]:
    """Close a circuit now (no failures counted, no probe): calls go to the route again at
    once, on every replica.

    Args:
        route_name (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Circuit | Problem]
    """

    kwargs = _get_kwargs(
        route_name=route_name,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    route_name: str,
    *,
    client: AuthenticatedClient,
) -> Circuit | Problem | None:
    """Close a circuit now (no failures counted, no probe): calls go to the route again at
    once, on every replica.

    Args:
        route_name (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Circuit | Problem
    """

    return sync_detailed(
        route_name=route_name,
        client=client,
    ).parsed


async def asyncio_detailed(
    route_name: str,
    *,
    client: AuthenticatedClient,
) -> Response[Circuit | Problem]:
    """Close a circuit now (no failures counted, no probe): calls go to the route again at
    once, on every replica.

    Args:
        route_name (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Circuit | Problem]
    """

    kwargs = _get_kwargs(
        route_name=route_name,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    route_name: str,
    *,
    client: AuthenticatedClient,
) -> Circuit | Problem | None:
    """Close a circuit now (no failures counted, no probe): calls go to the route again at
    once, on every replica.

    Args:
        route_name (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Circuit | Problem
    """

    return (
        await asyncio_detailed(
            route_name=route_name,
            client=client,
        )
    ).parsed
