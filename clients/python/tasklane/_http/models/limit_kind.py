from typing import Literal

LimitKind = Literal["budget", "capacity", "rate"]

LIMIT_KIND_VALUES: set[LimitKind] = {
    "budget",
    "capacity",
    "rate",
}


def check_limit_kind(value: str) -> LimitKind:
    if value in LIMIT_KIND_VALUES:
        return value
    raise TypeError(
        f"Unexpected value {value!r}. Expected one of {LIMIT_KIND_VALUES!r}"
    )
