from __future__ import annotations

import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from voxserve.errors import Unauthorized
from voxserve.server.auth import Authenticator, bearer_token
from voxserve.settings import Settings

SECRET = "s3cret-s3cret-s3cret-s3cret-s3cret"


def make(**kwargs: Any) -> Authenticator:
    return Authenticator(Settings(_env_file=None, **kwargs))


def token(claims: dict[str, object], key: str | bytes | rsa.RSAPrivateKey = SECRET, alg: str = "HS256") -> str:
    return jwt.encode(claims, key, algorithm=alg)


def test_disabled_by_default_accepts_anyone() -> None:
    auth = make()
    assert not auth.enabled
    assert auth.authenticate(None).kind == "anonymous"


def test_api_keys() -> None:
    auth = make(api_keys=["k1", "k2"])
    assert auth.authenticate("k2").kind == "api_key"
    assert auth.authenticate("k1").id != auth.authenticate("k2").id
    for bad in (None, "", "k3", "k1 "):
        with pytest.raises(Unauthorized):
            auth.authenticate(bad)


def test_api_keys_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VOXSERVE_API_KEYS", "a,b")
    assert Authenticator(Settings(_env_file=None)).authenticate("b").kind == "api_key"


def test_bearer_parsing() -> None:
    assert bearer_token("Bearer abc") == "abc"
    assert bearer_token("bearer  abc ") == "abc"
    assert bearer_token("Basic abc") is None
    assert bearer_token("Bearer") is None
    assert bearer_token(None) is None


def test_jwt_hs256_claims_checked() -> None:
    auth = make(jwt_secret=SECRET, jwt_audience="voxserve", jwt_issuer="https://issuer")
    good = {"sub": "alice", "exp": time.time() + 60, "aud": "voxserve", "iss": "https://issuer"}
    principal = auth.authenticate(token(good))
    assert principal.kind == "jwt" and principal.id == "jwt:alice"
    for change in ({"exp": time.time() - 5}, {"aud": "other"}, {"iss": "https://evil"}):
        with pytest.raises(Unauthorized):
            auth.authenticate(token({**good, **change}))
    no_exp = {k: v for k, v in good.items() if k != "exp"}
    with pytest.raises(Unauthorized, match="exp"):
        auth.authenticate(token(no_exp))
    with pytest.raises(Unauthorized):
        auth.authenticate(token(good, key="another-secret-another-secret-123"))


def test_jwt_algorithm_allow_list() -> None:
    claims = {"sub": "bob", "exp": time.time() + 60}
    auth = make(jwt_secret=SECRET, jwt_algorithms=["HS256"])
    with pytest.raises(Unauthorized, match="not allowed"):
        auth.authenticate(token(claims, alg="HS512"))
    unsigned = jwt.encode(claims, "", algorithm="none")
    with pytest.raises(Unauthorized):
        auth.authenticate(unsigned)


def test_jwt_rs256_with_public_key_only() -> None:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public_pem = (
        private.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    auth = make(jwt_public_key=public_pem)
    claims = {"sub": "carol", "exp": time.time() + 60}
    assert auth.authenticate(token(claims, key=private, alg="RS256")).id == "jwt:carol"
    # an HS256 token signed with the public key text must not pass (algorithm confusion)
    with pytest.raises(Unauthorized):
        auth.authenticate(jwt.encode(claims, "x" * 40, algorithm="HS256"))
