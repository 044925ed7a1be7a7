"""What checking a token costs: one RS256 verification in the standard library (what the
edge authorizer and a publicRead route's function do per uncached token), next to the
same check by the ``cryptography`` package, and the authorizer's whole answer.

    python -m bench.auth [--runs 2000]

Prints a Markdown table; docs/security.md quotes it.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding

from devstack.issuer import AUDIENCE, LocalIssuer
from podium import authorizer, identity
from podium.tokens import KeySet, Verifier, b64url_decode


def timed(work: Callable[[], object], runs: int) -> tuple[float, float]:
    """Median and 99th percentile of ``work``'s wall time, in microseconds."""
    work()  # warm up
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        samples.append((time.perf_counter() - start) * 1e6)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.99) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=2000)
    runs = parser.parse_args().runs
    issuer = LocalIssuer("http://127.0.0.1:1")
    now = int(time.time())
    claims = {"iss": issuer.url, "aud": AUDIENCE, "sub": "alice", "iat": now, "exp": now + 3600}
    token = issuer.sign(claims)
    verifier = Verifier(issuer.url, frozenset({AUDIENCE}), KeySet(issuer.jwks))
    head, body, signature = token.split(".")
    public_key = issuer.key.public_key()

    def with_cryptography() -> None:
        public_key.verify(
            b64url_decode(signature), f"{head}.{body}".encode(), padding.PKCS1v15(), hashes.SHA256()
        )

    identity.verifier.cache_clear()
    identity_verifier = identity.verifier
    identity.verifier = lambda: verifier  # type: ignore[assignment]  # no issuer to fetch from
    event = {
        "methodArn": "arn:aws:execute-api:us-east-1:123456789012:api/dev/GET/boards/b/top",
        "headers": {"Authorization": f"Bearer {token}"},
    }
    rows = [
        (
            "RS256 token, checked by podium.tokens (standard library)",
            timed(lambda: verifier.verify(token), runs),
        ),
        ("the same signature, checked by cryptography (OpenSSL)", timed(with_cryptography, runs)),
        (
            "the edge authorizer's whole answer (check + policy)",
            timed(lambda: authorizer.authorize(event), runs),
        ),
    ]
    identity.verifier = identity_verifier
    print(f"{runs} runs each, after one to warm up\n")
    print("| check | median µs | p99 µs |")
    print("|---|---:|---:|")
    for name, (median, p99) in rows:
        print(f"| {name} | {median:,.0f} | {p99:,.0f} |")


if __name__ == "__main__":
    main()
