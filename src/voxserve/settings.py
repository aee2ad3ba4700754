"""One settings object for the whole process, built once and passed down.

Every field reads ``VOXSERVE_<NAME>`` from the environment or a ``.env`` file.
Two common deployment names are accepted as aliases: ``MODEL_PATH`` and
``STREAM_BUFFER_MS``.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from voxserve.types import SplitPrecision

ModelSource = Literal["local", "hf", "registry"]
EngineName = Literal["kokoro", "piper"]
Precision = Literal["auto", SplitPrecision]


# JWT algorithms by the key that checks them: a shared secret, or a public key.
HMAC_ALGORITHMS = frozenset({"HS256", "HS384", "HS512"})
PUBLIC_KEY_ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "ES256", "ES384", "PS256"})

# ``VOXSERVE_*`` names that are not settings: the clients' key (the playground's snippets), the test
# suite's and the load tools' own variables. Any other unknown one is refused (:func:`unknown_variables`).
OTHER_VARIABLES = frozenset(
    {
        "VOXSERVE_API_KEY",
        "VOXSERVE_FUZZ",
        "VOXSERVE_TEST_URL",
        "VOXSERVE_TEST_TIGHT_URL",
        "VOXSERVE_TEST_PIPER_CONFIG",
        "VOXSERVE_PLUGIN_PYTHON",
        "VOXSERVE_BENCH_VOICE",
        "VOXSERVE_BENCH_TEXT_SET",
    }
)


def _default_sources() -> list[ModelSource]:
    return ["local", "registry", "hf"]


def _default_engines() -> list[EngineName]:
    return ["kokoro", "piper"]


def _default_cache() -> Path:
    return Path.home() / ".cache" / "voxserve"


class Settings(BaseSettings):
    """What an operator sets. See the README's table for every field; engine and scheduler tuning is
    :class:`voxserve.tuning.Tuning`, in code."""

    model_config = SettingsConfigDict(
        env_prefix="VOXSERVE_",
        env_file=".env",
        extra="ignore",
        populate_by_name=True,
        allow_inf_nan=False,  # "inf" would switch a guard off unseen, and "nan" fails every bound
    )

    # --- models -----------------------------------------------------------------
    cache_dir: Path = Field(default_factory=_default_cache, description="Model cache directory.")
    model_path: Path | None = Field(
        default=None,
        validation_alias=AliasChoices("VOXSERVE_MODEL_PATH", "MODEL_PATH", "model_path"),
        description="Local directory holding model files (first source tried).",
    )
    model_sources: Annotated[list[ModelSource], NoDecode] = Field(
        default_factory=_default_sources,
        description="Sources tried in order when fetching models.",
    )
    engines: Annotated[list[EngineName], NoDecode] = Field(
        default_factory=_default_engines, description="Engines loaded at start."
    )
    precision: Precision = Field(
        default="auto",
        description="Kokoro decoder precision: auto = int8 on CPU (its convolutions as integer matrix "
        "products where measured exact and faster here), fp16 on GPU.",
    )
    model_key_file: Path | None = Field(
        default=None,
        description="Key of the sealed (encrypted) model files: a file holding 64 hex characters "
        "(docs/security.md, 'voxserve models encrypt').",
    )
    model_key: SecretStr | None = Field(
        default=None, description="The same key in the environment (VOXSERVE_MODEL_KEY) instead of a file."
    )

    # --- runtime ----------------------------------------------------------------
    providers: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["auto"],
        description="ONNX Runtime providers; 'auto' picks CUDA when present, else CPU (TensorRT only by name).",
    )
    warm_languages: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["all"],
        description="Languages whose text front end is built at start (a cold one costs a first request "
        "up to ~5 s): 'all' the loaded voices speak, or a list such as 'en-us,zh'; 'none' for none.",
    )
    intra_op_threads: int = Field(default=0, ge=0, description="Threads per ONNX session (0 = cores).")
    decode_batch: int = Field(
        default=0,
        ge=0,
        le=1024,
        description="Most decoder windows of concurrent streams in one call (0 or 1: one each, best on CPU and GPU).",
    )

    piper_memory_mb: int = Field(
        default=1024,
        ge=64,
        description="Memory the Piper voices found under MODEL_PATH may hold loaded; the least recently used "
        "are unloaded beyond it.",
    )

    # --- voice defaults -----------------------------------------------------------
    default_voice: str = Field(default="af_heart")
    default_lang: str | None = Field(default=None, description="Language when the voice does not imply one.")
    language_voices: Annotated[dict[str, str], NoDecode] = Field(
        default_factory=dict,
        description="Voice per language, e.g. 'ja=jf_alpha,zh=zf_xiaobei': text a request's voice cannot read "
        "goes to the voice of its language, and with no voice or 'auto' each language's voice is this one.",
    )

    # --- streaming ----------------------------------------------------------------
    stream_buffer_ms: int = Field(
        default=200,
        ge=20,
        le=5000,
        validation_alias=AliasChoices("VOXSERVE_STREAM_BUFFER_MS", "STREAM_BUFFER_MS", "stream_buffer_ms"),
        description="Target size of audio chunks sent to clients.",
    )
    first_segment_words: int = Field(default=6, ge=1, description="Words in the first text segment, at most.")
    max_segment_chars: int = Field(default=400, ge=40, description="Longest text segment sent to a model.")
    sentence_pause_ms: int = Field(
        default=500, ge=0, le=2000, description="Pause at a sentence join (Kokoro's own are ~500 ms)."
    )
    clause_pause_ms: int = Field(default=160, ge=0, le=2000)
    idle_flush_ms: int = Field(
        default=150, ge=0, description="Speak a buffered sentence end after this long without new text (0 = never)."
    )
    lookahead_s: float = Field(default=3.0, gt=0, description="Audio kept synthesized ahead of playback.")
    max_input_chars: int = Field(default=100_000, ge=1)

    # --- server -----------------------------------------------------------------
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    grpc_port: int = Field(default=50051, ge=0, le=65535, description="0 disables the gRPC server.")
    max_load: float = Field(
        default=0.8,
        gt=0,
        le=4.0,
        description="Admit a new stream only while the streams' predicted demand, from costs measured on this "
        "machine, stays within this fraction of its cores (1.0: every core; the default leaves a fifth for the "
        "moments demand exceeds its average; above 1 books more than the cores can feed, and listeners stall: "
        "for measuring saturation). /readyz answers 503 'full' beyond it.",
    )
    max_streams: int = Field(
        default=128, ge=1, description="Ceiling on concurrent synthesis streams, whatever they cost."
    )
    max_queue: int = Field(default=0, ge=0, description="Streams that may wait for capacity (0: refuse at once).")
    queue_timeout_s: float = Field(
        default=1.0, gt=0, le=600, description="Longest a waiting stream waits for capacity before it is refused."
    )
    shutdown_grace_s: float = Field(default=10.0, ge=0)
    client_stall_s: float = Field(
        default=30.0,
        gt=0,
        description="A client that takes no audio for this long is dropped and its stream slot freed "
        "(HTTP and gRPC streams; a WebSocket client that stops reading misses pings and is dropped too).",
    )
    api_keys: Annotated[list[str], NoDecode] = Field(default_factory=list)
    jwt_secret: str | None = None
    jwt_public_key: str | None = None
    jwt_algorithms: Annotated[list[str], NoDecode] = Field(default_factory=lambda: ["HS256", "RS256"])
    jwt_audience: str | None = None
    jwt_issuer: str | None = None
    rate_limit_per_minute: int = Field(default=100, ge=0, description="Requests per minute per client; 0 = off.")
    max_ws_message_bytes: int = Field(default=64 * 1024, ge=1024)
    max_fragments_per_second: int = Field(default=200, ge=1)
    max_connections_per_client: int = Field(
        default=64,
        ge=0,
        description="HTTP requests, WebSockets and gRPC calls one client address may each have open at once; 0 = any.",
    )
    header_timeout_s: float = Field(
        default=10.0, gt=0, description="An HTTP request's headers must all arrive within this long (slowloris)."
    )
    body_timeout_s: float = Field(
        default=30.0, gt=0, description="Each part of an HTTP request body must arrive within this long."
    )
    max_header_bytes: int = Field(default=16 * 1024, ge=1024, description="Largest HTTP request head (431/400 beyond).")
    keep_alive_s: float = Field(
        default=15.0,
        gt=0,
        le=3600,
        description=(
            "An idle HTTP keep-alive connection is closed after this long. Keep it above how long your clients "
            "and load balancer reuse an idle connection (httpx and the OpenAI SDK: 5 s): a request sent just as "
            "the server closes the connection fails with no response."
        ),
    )
    ws_first_message_s: float = Field(
        default=10.0,
        gt=0,
        description="A WebSocket must send its first message (its config, or its credentials) within this long.",
    )
    ws_idle_timeout_s: float = Field(
        default=300.0,
        ge=0,
        description="A WebSocket that sends nothing and has no utterance in progress this long is closed; 0 = never.",
    )
    max_contexts: int = Field(
        default=8,
        ge=1,
        description="Contexts open at once on a protocol-2 connection; utterances queued or speaking on protocol 1.",
    )
    context_idle_s: float = Field(
        default=30.0,
        gt=0,
        description="A protocol-2 context that gets no message and makes no audio for this long is closed.",
    )
    tls_certfile: Path | None = None
    tls_keyfile: Path | None = None
    cors_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    trusted_proxies: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["127.0.0.1", "::1"],
        description="Proxies (addresses or networks, '*' = any) whose X-Forwarded-For names the client.",
    )
    log_text: bool = Field(default=False, description="Include input text in access and audit logs.")
    audit_log_file: Path | None = Field(
        default=None, description="Also append the audit log (one JSON line per utterance) to this file."
    )
    lexicon: Path | None = Field(
        default=None,
        description="Pronunciation dictionary: a JSON file of entries per language (docs/protocol.md).",
    )

    @field_validator(
        "providers",
        "model_sources",
        "engines",
        "api_keys",
        "cors_origins",
        "jwt_algorithms",
        "warm_languages",
        "trusted_proxies",
        mode="before",
    )
    @classmethod
    def _split_csv(cls, value: object) -> object:
        if isinstance(value, str):
            if value.strip().startswith("["):
                return json.loads(value)
            return [item.strip() for item in value.split(",") if item.strip()]
        return value

    @field_validator("language_voices", mode="before")
    @classmethod
    def _split_pairs(cls, value: object) -> object:
        if isinstance(value, str):
            if value.strip().startswith("{"):
                return json.loads(value)
            pairs = [item.split("=", 1) for item in value.split(",") if item.strip()]
            if any(len(pair) != 2 for pair in pairs):
                raise ValueError(f"expected 'lang=voice,lang=voice', got {value!r}")
            return {lang.strip(): voice.strip() for lang, voice in pairs}
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _check_proxies(cls, value: list[str]) -> list[str]:
        """Each entry as the network it names (``127.0.0.1/8`` → ``127.0.0.0/8``): HTTP's proxy headers
        (uvicorn) parse networks strictly and would take a loose one for a literal name, where gRPC's
        check matched it as a network, and the two transports would trust different clients."""
        networks = []
        for entry in value:
            if entry == "*":
                networks.append(entry)
                continue
            try:
                network = ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(f"{entry!r} is not an address or network (e.g. 10.0.0.0/8), nor '*'") from None
            networks.append(str(network.network_address) if network.num_addresses == 1 else str(network))
        return networks

    @field_validator("jwt_algorithms")
    @classmethod
    def _check_algorithms(cls, value: list[str]) -> list[str]:
        """Only algorithms a key can check: 'none' or a misspelt name would otherwise leave JWTs
        silently refused."""
        known = HMAC_ALGORITHMS | PUBLIC_KEY_ALGORITHMS
        wrong = [name for name in value if name not in known]
        if wrong:
            raise ValueError(f"unknown JWT algorithm(s) {', '.join(wrong)}; choose from {', '.join(sorted(known))}")
        if not value:
            raise ValueError("give at least one JWT algorithm")
        return value

    @field_validator("audit_log_file")
    @classmethod
    def _check_audit_log(cls, value: Path | None) -> Path | None:
        if value is not None and not value.parent.is_dir():
            raise ValueError(f"the folder of {value} does not exist")
        return value

    @model_validator(mode="after")
    def _check_tls(self) -> Settings:
        """TLS needs both files, and both must exist: half a configuration would serve plain text."""
        files = {"tls_certfile": self.tls_certfile, "tls_keyfile": self.tls_keyfile}
        given = [name for name, path in files.items() if path is not None]
        if len(given) == 1:
            other = "VOXSERVE_TLS_KEYFILE" if given[0] == "tls_certfile" else "VOXSERVE_TLS_CERTFILE"
            raise ValueError(f"TLS needs {other} too (only VOXSERVE_{given[0].upper()} is set)")
        for name, path in files.items():
            if path is not None and not path.is_file():
                raise ValueError(f"VOXSERVE_{name.upper()}: no such file {path}")
        return self

    @model_validator(mode="after")
    def _check_jwt_keys(self) -> Settings:
        """A JWT key needs an algorithm it can check, or every token signed for it would be refused."""
        for key, family, name in (
            (self.jwt_secret, HMAC_ALGORITHMS, "VOXSERVE_JWT_SECRET"),
            (self.jwt_public_key, PUBLIC_KEY_ALGORITHMS, "VOXSERVE_JWT_PUBLIC_KEY"),
        ):
            if key and not family & set(self.jwt_algorithms):
                algorithms = ", ".join(sorted(family))
                raise ValueError(f"{name} is set but VOXSERVE_JWT_ALGORITHMS has none of its algorithms ({algorithms})")
        return self

    @property
    def auth_enabled(self) -> bool:
        return bool(self.api_keys or self.jwt_secret or self.jwt_public_key)

    def resolved_intra_op_threads(self, cores: int) -> int:
        return self.intra_op_threads or max(1, cores)


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """``VOXSERVE_*`` names in ``environ`` that no setting reads, each with the setting it most looks
    like: a misspelt name (``VOXSERVE_API_KEY_S``) would otherwise be ignored, and the server would run
    without what the operator meant to set."""
    known = {f"VOXSERVE_{name.upper()}" for name in Settings.model_fields}
    problems = []
    for name in sorted(environ):
        upper = name.upper()
        if not upper.startswith("VOXSERVE_") or upper in known or upper in OTHER_VARIABLES:
            continue
        close = difflib.get_close_matches(upper, sorted(known), n=1, cutoff=0.75)
        hint = f" (did you mean {close[0]}?)" if close else ""
        problems.append(f"{name} is not a setting{hint}")
    return problems
