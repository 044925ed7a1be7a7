"""The ranking indexes (``RankIndex`` on ``rpk``, ``RankIndexB`` on ``rpkB``; KEYS_ONLY):
shard partitions of sort keys ``rsk`` whose byte order is the listing order. Which index a
query reads follows from its partition key, which the board's layout gives
(``podium.keys.partitions``). Reads only: the score items write it. Range bounds are
inclusive; the domain turns its open bounds into them (``podium.keys.just_below``)."""

from __future__ import annotations

from typing import Any

from podium.dal.client import Tables


class RankIndex:
    def __init__(self, tables: Tables) -> None:
        self.tables = tables

    def _request(self, partition: str, lo: str | None, hi: str | None) -> dict[str, Any]:
        index, attribute = self.tables.index_for(partition)
        condition = f"{attribute} = :p"
        values: dict[str, Any] = {":p": {"S": partition}}
        if lo and hi is not None:
            condition += " AND rsk BETWEEN :lo AND :hi"
            values.update({":lo": {"S": lo}, ":hi": {"S": hi}})
        elif lo:
            condition += " AND rsk >= :lo"
            values[":lo"] = {"S": lo}
        elif hi is not None:
            condition += " AND rsk <= :hi"
            values[":hi"] = {"S": hi}
        return {
            "TableName": self.tables.table,
            "IndexName": index,
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": values,
        }

    def keys_in_range(
        self,
        partition: str,
        lo: str | None,
        hi: str | None,
        *,
        limit: int | None = None,
        reverse: bool = False,
    ) -> list[str]:
        """The sort keys of one shard in ``[lo, hi]`` (None or empty: no bound), best first
        (with ``reverse``, worst first), at most ``limit`` of them. Follows
        ``LastEvaluatedKey`` past the 1 MB page limit: fewer than ``limit`` keys means the
        shard has no more in the range."""
        request = self._request(partition, lo, hi)
        request["ProjectionExpression"] = "rsk"
        request["ScanIndexForward"] = not reverse
        if limit is not None:
            request["Limit"] = limit
        keys: list[str] = []
        for response in self.tables.query_pages(request):
            keys.extend(item["rsk"]["S"] for item in response.get("Items", []))
            if limit is not None:
                if len(keys) >= limit:
                    break
                request["Limit"] = limit - len(keys)
        return keys if limit is None else keys[:limit]

    def count_range(self, partition: str, lo: str | None, hi: str | None) -> int:
        """COUNT one shard's entries in ``[lo, hi]`` (bounds as in ``keys_in_range``)."""
        return self.tables.count(self._request(partition, lo, hi))
