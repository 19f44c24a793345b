from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.deleted import Deleted
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    scope_id: str,
    *,
    source_id: str | Unset = UNSET,
    fence: bool | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["source_id"] = source_id

    params["fence"] = fence

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "delete",
        "url": "/v1/scopes/{scope_id}/tasks".format(
            scope_id=quote(str(scope_id), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Deleted | Problem | None:
    if response.status_code == 200:
        response_200 = Deleted.from_dict(response.json())

        return response_200

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 422:
        response_422 = Problem.from_dict(response.json())

        return response_422

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
) -> Response[Deleted | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    scope_id: str,
    *,
    client: AuthenticatedClient,
    source_id: str | Unset = UNSET,
    fence: bool | Unset = UNSET,
) -> Response[Deleted | Problem]:
    """Delete the scope's tasks in every state (or only the exact source), serialized with
    admission for the scope; optionally fence the scope.

    Args:
        scope_id (str):
        source_id (str | Unset):
        fence (bool | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Deleted | Problem]
    """

    kwargs = _get_kwargs(
        scope_id=scope_id,
        source_id=source_id,
        fence=fence,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    scope_id: str,
    *,
    client: AuthenticatedClient,
    source_id: str | Unset = UNSET,
    fence: bool | Unset = UNSET,
) -> Deleted | Problem | None:
    """Delete the scope's tasks in every state (or only the exact source), serialized with
    admission for the scope; optionally fence the scope.

    Args:
        scope_id (str):
        source_id (str | Unset):
        fence (bool | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Deleted | Problem
    """

    return sync_detailed(
        scope_id=scope_id,
        client=client,
        source_id=source_id,
        fence=fence,
    ).parsed


async def asyncio_detailed(
    scope_id: str,
    *,
    client: AuthenticatedClient,
    source_id: str | Unset = UNSET,
    fence: bool | Unset = UNSET,
) -> Response[Deleted | Problem]:
    """Delete the scope's tasks in every state (or only the exact source), serialized with
    admission for the scope; optionally fence the scope.

    Args:
        scope_id (str):
        source_id (str | Unset):
        fence (bool | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Deleted | Problem]
    """

    kwargs = _get_kwargs(
        scope_id=scope_id,
        source_id=source_id,
        fence=fence,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    scope_id: str,
    *,
    client: AuthenticatedClient,
    source_id: str | Unset = UNSET,
    fence: bool | Unset = UNSET,
) -> Deleted | Problem | None:
    """Delete the scope's tasks in every state (or only the exact source), serialized with
    admission for the scope; optionally fence the scope.

    Args:
        scope_id (str):
        source_id (str | Unset):
        fence (bool | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Deleted | Problem
    """

    return (
        await asyncio_detailed(
            scope_id=scope_id,
            client=client,
            source_id=source_id,
            fence=fence,
        )
    ).parsed
