"""Reading a secret of the stack from Secrets Manager (the cursor key: ``podium.cursorkeys``).
The function's role may read that secret alone (template.yaml, tests/unit/test_least_privilege.py)."""

from __future__ import annotations


def read_secret(secret_id: str) -> str:
    """The secret's current value (its ``AWSCURRENT`` version), as the string it holds."""
    import boto3  # the client is made here, at the first cursor, not at every cold start

    client = boto3.client("secretsmanager")
    value: str = client.get_secret_value(SecretId=secret_id)["SecretString"]
    return value
