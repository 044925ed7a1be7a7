"""Podium: the domain package shared by every Lambda function of the leaderboard service.

Shard assignment, the order-preserving sort keys of the ranking index, scatter-gather,
merging and ranking live here; handlers in ``functions/`` stay thin.
"""
