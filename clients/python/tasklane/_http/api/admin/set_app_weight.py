from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.weight_body import WeightBody
from ...models.weight_set import WeightSet
from ...types import Response


def _get_kwargs(
    app: str,
    *,
    body: WeightBody,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/v1/admin/apps/{app}/weight".format(
            app=quote(str(app), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | WeightSet | None:
    if response.status_code == 200:
        response_200 = WeightSet.from_dict(response.json())

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
) -> Response[Problem | WeightSet]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    app: str,
    *,
    client: AuthenticatedClient,
    body: WeightBody,
) -> Response[Problem | WeightSet]:
    """Set an app's weight: its share of the claims' turns against the other apps with
    claimable work in the same priority level (default 1). It applies to the app's tasks
    that take their turn after it is set; a task takes its turn when it becomes
    claimable.

    Args:
        app (str):
        body (WeightBody): Body of `PUT /v1/admin/apps/{app}/weight`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | WeightSet]
    """

    kwargs = _get_kwargs(
        app=app,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    app: str,
    *,
    client: AuthenticatedClient,
    body: WeightBody,
) -> Problem | WeightSet | None:
    """Set an app's weight: its share of the claims' turns against the other apps with
    claimable work in the same priority level (default 1). It applies to the app's tasks
    that take their turn after it is set; a task takes its turn when it becomes
    claimable.

    Args:
        app (str):
        body (WeightBody): Body of `PUT /v1/admin/apps/{app}/weight`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | WeightSet
    """

    return sync_detailed(
        app=app,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    app: str,
    *,
    client: AuthenticatedClient,
    body: WeightBody,
) -> Response[Problem | WeightSet]:
    """Set an app's weight: its share of the claims' turns against the other apps with
    claimable work in the same priority level (default 1). It applies to the app's tasks
    that take their turn after it is set; a task takes its turn when it becomes
    claimable.

    Args:
        app (str):
        body (WeightBody): Body of `PUT /v1/admin/apps/{app}/weight`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | WeightSet]
    """

    kwargs = _get_kwargs(
        app=app,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    app: str,
    *,
    client: AuthenticatedClient,
    body: WeightBody,
) -> Problem | WeightSet | None:
    """Set an app's weight: its share of the claims' turns against the other apps with
    claimable work in the same priority level (default 1). It applies to the app's tasks
    that take their turn after it is set; a task takes its turn when it becomes
    claimable.

    Args:
        app (str):
        body (WeightBody): Body of `PUT /v1/admin/apps/{app}/weight`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | WeightSet
    """

    return (
        await asyncio_detailed(
            app=app,
            client=client,
            body=body,
        )
    ).parsed
