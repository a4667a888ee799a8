"""Retention's one query shape: the rows of each cluster beyond its newest few."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa


def beyond_newest(
    key: sa.ColumnElement[Any],
    cluster: sa.ColumnElement[Any],
    newest_first: sa.ColumnElement[Any],
    keep: int,
    *where: sa.ColumnElement[bool],
) -> sa.ScalarSelect[Any]:
    """`key`s of the rows (matching `where`) that are not among the `keep` newest of their
    cluster, for `DELETE ... WHERE key IN (...)`."""
    ranked = (
        sa.select(
            key.label("key"),
            sa.func.row_number().over(partition_by=cluster, order_by=newest_first).label("rank"),
        )
        .where(*where)
        .subquery()
    )
    return sa.select(ranked.c.key).where(ranked.c.rank > keep).scalar_subquery()
