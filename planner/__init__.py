"""Capacity planning for Podium in AWS: shards, request units and the monthly bill for a
workload, from DynamoDB's published per-partition limits.

``planner.capacity`` holds one board's arithmetic (no boto3, no I/O: the count tree's
writes modelled at the stream's batches), ``planner.bill`` the whole bill and the unit
costs, ``planner.fleet`` many boards, ``planner.alternatives`` and ``planner.compare``
ElastiCache beside them, ``planner.report`` the tables and JSON; ``podium plan`` (``make
plan``) prints them. docs/capacity.md explains every figure.
"""
