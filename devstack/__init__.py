"""Podium's local stack without Docker: DynamoDB Local, the template's tables, the API
and the stream consumers, all read from ``template.yaml``."""
