"""AWS Signature Version 4 for DynamoDB's JSON requests, as the direct path sends them.

One request shape only: ``POST /`` with no query string and five headers at most
(``content-type``, ``host``, ``x-amz-date``, ``x-amz-security-token`` with temporary
credentials, ``x-amz-target``), all of them signed.  The day's signing key (four
HMACs) is derived once per secret, day and region; a request then costs two SHA-256
digests and one HMAC.  ``tests/core/test_direct.py`` checks every signature against
botocore's ``SigV4Auth`` on the same request.
"""

from __future__ import annotations

import hashlib
import hmac
import time

ALGORITHM = "AWS4-HMAC-SHA256"
CONTENT_TYPE = "application/x-amz-json-1.0"


class Signer:
    """Signs DynamoDB requests for one region (``service`` is ``dynamodb``)."""

    def __init__(self, region: str, service: str = "dynamodb") -> None:
        self.region = region
        self.service = service
        self._keys: dict[tuple[str, str], bytes] = {}

    def _key(self, secret_key: str, day: str) -> bytes:
        key = self._keys.get((secret_key, day))
        if key is None:
            key = hmac.new(f"AWS4{secret_key}".encode(), day.encode(), hashlib.sha256).digest()
            for part in (self.region, self.service, "aws4_request"):
                key = hmac.new(key, part.encode(), hashlib.sha256).digest()
            if len(self._keys) > 8:  # old days and rotated secrets: keep the cache small
                self._keys.clear()
            self._keys[(secret_key, day)] = key
        return key

    def headers(
        self,
        *,
        host: str,
        target: str,
        body: bytes,
        access_key: str,
        secret_key: str,
        token: str | None = None,
        now: float | None = None,
    ) -> dict[str, str]:
        """The request's headers, ``Authorization`` included (``host`` as sent, port and all)."""
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
        day = stamp[:8]
        headers = {"content-type": CONTENT_TYPE, "host": host, "x-amz-date": stamp}
        if token:
            headers["x-amz-security-token"] = token
        headers["x-amz-target"] = target
        names = ";".join(headers)  # already in sorted order, lower case
        canonical = "".join(f"{name}:{value.strip()}\n" for name, value in headers.items())
        request = f"POST\n/\n\n{canonical}\n{names}\n{hashlib.sha256(body).hexdigest()}"
        scope = f"{day}/{self.region}/{self.service}/aws4_request"
        to_sign = f"{ALGORITHM}\n{stamp}\n{scope}\n{hashlib.sha256(request.encode()).hexdigest()}"
        signature = hmac.new(self._key(secret_key, day), to_sign.encode(), hashlib.sha256)
        headers["authorization"] = (
            f"{ALGORITHM} Credential={access_key}/{scope}, SignedHeaders={names}, "
            f"Signature={signature.hexdigest()}"
        )
        return headers
