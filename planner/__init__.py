"""Capacity planning for Podium in AWS: shards, request units and the monthly on-demand
bill for a workload, from DynamoDB's published per-partition limits.

``planner.capacity`` holds the arithmetic (no boto3, no I/O), ``planner.report`` its
table and JSON; ``podium plan`` (``make plan``) prints them. docs/capacity.md explains
every figure.
"""
