from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.pause_body import PauseBody
from ...models.problem import Problem
from ...models.type_paused import TypePaused
from ...types import Response


def _get_kwargs(
    name: str,
    *,
    body: PauseBody,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/v1/admin/task-types/{name}/pause".format(
            name=quote(str(name), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | TypePaused | None:
    if response.status_code == 200:
        response_200 = TypePaused.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 413:
        response_413 = Problem.from_dict(response.json())

        return response_413

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
) -> Response[Problem | TypePaused]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    name: str,
    *,
    client: AuthenticatedClient,
    body: PauseBody,
) -> Response[Problem | TypePaused]:
    """Pause or resume a task type: while paused no replica or remote worker claims it;
    submits are still accepted and queued, and the queue deadline still applies.

    Args:
        name (str):
        body (PauseBody): Body of `PUT /v1/admin/task-types/{name}/pause`, and its answer with the
            name.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | TypePaused]
    """

    kwargs = _get_kwargs(
        name=name,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    name: str,
    *,
    client: AuthenticatedClient,
    body: PauseBody,
) -> Problem | TypePaused | None:
    """Pause or resume a task type: while paused no replica or remote worker claims it;
    submits are still accepted and queued, and the queue deadline still applies.

    Args:
        name (str):
        body (PauseBody): Body of `PUT /v1/admin/task-types/{name}/pause`, and its answer with the
            name.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | TypePaused
    """

    return sync_detailed(
        name=name,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    name: str,
    *,
    client: AuthenticatedClient,
    body: PauseBody,
) -> Response[Problem | TypePaused]:
    """Pause or resume a task type: while paused no replica or remote worker claims it;
    submits are still accepted and queued, and the queue deadline still applies.

    Args:
        name (str):
        body (PauseBody): Body of `PUT /v1/admin/task-types/{name}/pause`, and its answer with the
            name.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | TypePaused]
    """

    kwargs = _get_kwargs(
        name=name,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    name: str,
    *,
    client: AuthenticatedClient,
    body: PauseBody,
) -> Problem | TypePaused | None:
    """Pause or resume a task type: while paused no replica or remote worker claims it;
    submits are still accepted and queued, and the queue deadline still applies.

    Args:
        name (str):
        body (PauseBody): Body of `PUT /v1/admin/task-types/{name}/pause`, and its answer with the
            name.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | TypePaused
    """

    return (
        await asyncio_detailed(
            name=name,
            client=client,
            body=body,
        )
    ).parsed
