"""Who is calling: API keys and JWTs, the same check for HTTP, WebSocket and gRPC.

Authentication is off unless keys are configured (``Settings.auth_enabled``); then every
synthesis request must carry ``Authorization: Bearer <api key or JWT>`` (or the transport's
equivalent, see the WebSocket and gRPC modules).
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

import jwt

from voxserve.errors import Unauthorized
from voxserve.settings import HMAC_ALGORITHMS, PUBLIC_KEY_ALGORITHMS, Settings


@dataclass(frozen=True)
class Principal:
    """The authenticated caller; ``id`` keys rate limits (a key digest or the JWT subject)."""

    id: str
    kind: str  # "anonymous" | "api_key" | "jwt"


ANONYMOUS = Principal(id="anonymous", kind="anonymous")


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer …`` header value, or None."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


class Authenticator:
    """Checks credentials against the configured API keys and JWT keys."""

    def __init__(self, settings: Settings) -> None:
        self.enabled = settings.auth_enabled
        self._keys = [key.encode() for key in settings.api_keys]
        self._secret = settings.jwt_secret
        self._public_key = settings.jwt_public_key
        self._audience = settings.jwt_audience
        self._issuer = settings.jwt_issuer
        allowed = set(settings.jwt_algorithms)
        usable: set[str] = set()
        if self._secret:
            usable |= HMAC_ALGORITHMS
        if self._public_key:
            usable |= PUBLIC_KEY_ALGORITHMS
        self._algorithms = sorted(allowed & usable)

    def authenticate(self, token: str | None) -> Principal:
        """Return the caller for ``token``; raise :class:`Unauthorized` when it is missing or invalid."""
        if not self.enabled:
            return ANONYMOUS
        if not token:
            raise Unauthorized("missing credentials: send 'Authorization: Bearer <api key or JWT>'")
        candidate = token.encode()
        for key in self._keys:
            if hmac.compare_digest(candidate, key):
                return Principal(id="key:" + hashlib.sha256(candidate).hexdigest()[:16], kind="api_key")
        if self._algorithms and token.count(".") == 2:
            return self._check_jwt(token)
        raise Unauthorized("invalid API key or token")

    def _check_jwt(self, token: str) -> Principal:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise Unauthorized(f"malformed token: {exc}") from None
        alg = header.get("alg")
        if alg not in self._algorithms:
            raise Unauthorized(f"token algorithm {alg!r} is not allowed (allowed: {', '.join(self._algorithms)})")
        key = self._secret if alg in HMAC_ALGORITHMS else self._public_key
        assert key is not None
        options = {"require": ["exp"], "verify_aud": self._audience is not None}
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=[alg],
                audience=self._audience,
                issuer=self._issuer,
                options=options,  # type: ignore[arg-type]
            )
        except jwt.PyJWTError as exc:
            raise Unauthorized(f"invalid token: {exc}") from None
        subject = str(claims.get("sub") or hashlib.sha256(token.encode()).hexdigest()[:16])
        return Principal(id="jwt:" + subject, kind="jwt")
