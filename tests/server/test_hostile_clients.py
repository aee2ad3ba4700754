"""Hostile and careless clients over real HTTP, WebSocket and gRPC: credentials never reach a log line,
silent WebSockets are closed, every method on an API path gets a true answer, a 401 names its scheme,
invalid UTF-8 is the client's error, and a number too long to read is a clean 400 on every transport."""

from __future__ import annotations

import contextlib
import logging
import queue
import time
from collections.abc import Iterator

import grpc
import httpx
import jwt
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect
from websockets.typing import Origin

from voxserve.server.grpc_gen import voxserve_pb2 as pb
from voxserve.server.grpc_gen import voxserve_pb2_grpc as pb_grpc

from .support import PIPER, SHORT, RunningServer, ServerMaker
from .test_ws import recv_json, send

pytestmark = pytest.mark.e2e

KEY = "key-9f3a7c1e5b2d4f60"
SECRET = "jwt-secret-0123456789abcdef0123456789"
LOGGERS = ("", "uvicorn", "uvicorn.error", "uvicorn.access", "voxserve", "grpc", "websockets", "httpx")


class Everything(logging.Handler):
    """Every record, formatted with its traceback, as some handler would write it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
        self.records: list[logging.LogRecord] = []
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.lines.append(self.format(record))

    def listen(self) -> None:
        """Every logger at DEBUG (again after a server starts: uvicorn sets its own loggers' levels)."""
        for name in LOGGERS:
            logging.getLogger(name).setLevel(logging.DEBUG)


@pytest.fixture()
def all_logs() -> Iterator[Everything]:
    handler = Everything()
    saved = {name: logging.getLogger(name).level for name in LOGGERS}
    handler.listen()
    logging.getLogger().addHandler(handler)
    try:
        yield handler
    finally:
        logging.getLogger().removeHandler(handler)
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)


def _jwt(subject: str) -> str:
    return jwt.encode({"sub": subject, "exp": time.time() + 300}, SECRET, algorithm="HS256")


def test_no_credential_reaches_any_log_line(
    make_server: ServerMaker, all_logs: Everything, capfd: pytest.CaptureFixture[str]
) -> None:
    server: RunningServer = make_server(api_keys=[KEY], jwt_secret=SECRET)
    all_logs.listen()
    token = _jwt("alice")
    wrong = "wrong-key-55aa66bb77cc"
    bad_jwt = jwt.encode({"sub": "mallory", "exp": time.time() + 300}, "another-secret-" * 3, algorithm="HS256")
    body = {"input": "Hi.", "voice": PIPER, "response_format": "pcm"}
    # HTTP: key, JWT, wrong key, forged JWT
    for credential, status in ((KEY, 200), (token, 200), (wrong, 401), (bad_jwt, 401)):
        reply = httpx.post(
            server.base + "/v1/audio/speech?api_key=" + credential,
            json=body,
            headers={"Authorization": f"Bearer {credential}"},
            timeout=30,
        )
        assert reply.status_code == status
    # WebSocket: ?token=, ?api_key=, the header, the config message
    for url, headers, config in (
        (f"{server.ws}?token={KEY}", None, {}),
        (f"{server.ws}?api_key={token}", None, {}),
        (server.ws, {"Authorization": f"Bearer {token}"}, {}),
        (server.ws, None, {"api_key": KEY}),
        (f"{server.ws}?token={wrong}", None, {}),
    ):
        with connect(url, additional_headers=headers) as ws, contextlib.suppress(ConnectionClosed):
            send(ws, type="config", voice=PIPER, format="pcm", **config)  # a wrong key: error, then 4001
            assert recv_json(ws)["type"] in ("ready", "error")
    # gRPC metadata
    with grpc.insecure_channel(server.grpc) as channel:
        client = pb_grpc.VoxServeStub(channel)
        for credential in (KEY, token):
            auth = (("authorization", f"Bearer {credential}"),)
            assert client.Synthesize(pb.SynthesizeRequest(text="Hi.", voice=PIPER), metadata=auth, timeout=30).audio
        with pytest.raises(grpc.RpcError):
            client.Synthesize(pb.SynthesizeRequest(text="Hi."), metadata=(("authorization", f"Bearer {wrong}"),))
    time.sleep(0.3)  # the server thread's last log lines
    out = capfd.readouterr()
    text = "\n".join(all_logs.lines) + out.out + out.err
    assert "WebSocket /v1/tts/stream?token=[redacted]" in text  # uvicorn's line was seen, and cleaned
    for secret in (KEY, token, wrong, bad_jwt, token.split(".")[2], bad_jwt.split(".")[1]):
        assert secret not in text


def test_a_websocket_that_never_authenticates_is_closed_4001(make_server: ServerMaker) -> None:
    server: RunningServer = make_server(api_keys=[KEY], ws_first_message_s=0.5)
    started = time.monotonic()
    with connect(server.ws) as ws:
        error = recv_json(ws, timeout=5)
        assert error["type"] == "error" and error["code"] == "unauthorized"
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=5)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4001
    assert time.monotonic() - started < 4


def test_a_silent_websocket_is_closed_and_an_idle_one_too(make_server: ServerMaker) -> None:
    server: RunningServer = make_server(ws_first_message_s=0.5, ws_idle_timeout_s=1.0)
    with connect(server.ws) as ws:  # never sends config
        assert recv_json(ws, timeout=5)["code"] == "idle_timeout"
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=5)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
    with connect(server.ws) as ws:
        send(ws, type="config", voice=PIPER, format="pcm")
        assert recv_json(ws)["type"] == "ready"
        send(ws, type="text", text=SHORT)
        send(ws, type="close")
        events = [recv_json(ws, timeout=30)["type"] for _ in range(3)]  # kept open while it speaks
        assert "chunk" in events
        while recv_json(ws, timeout=30)["type"] != "done":
            pass
        started = time.monotonic()
        assert recv_json(ws, timeout=5)["code"] == "idle_timeout"  # then idle: closed a second later
        assert 0.5 < time.monotonic() - started < 4


def test_every_method_on_an_api_path_gets_a_true_answer(server: RunningServer) -> None:
    options = httpx.options(server.base + "/v1/audio/speech")
    assert options.status_code == 204 and options.headers["allow"] == "OPTIONS, POST"
    head = httpx.head(server.base + "/v1/models")
    assert head.status_code == 200 and head.content == b""
    assert int(head.headers["content-length"]) == len(httpx.get(server.base + "/v1/models").content)
    assert httpx.head(server.base + "/healthz").status_code == 200
    refused = httpx.get(server.base + "/v1/audio/speech")
    assert refused.status_code == 405 and refused.headers["allow"] == "OPTIONS, POST"
    assert httpx.delete(server.base + "/v1/models").headers["allow"] == "GET, HEAD, OPTIONS"


def test_a_401_names_the_bearer_scheme(make_server: ServerMaker) -> None:
    server: RunningServer = make_server(api_keys=[KEY])
    for headers in ({}, {"Authorization": "Bearer nope"}):
        reply = httpx.post(server.base + "/v1/audio/speech", json={"input": "Hi."}, headers=headers)
        assert reply.status_code == 401 and reply.headers["www-authenticate"].startswith("Bearer ")
        assert reply.json()["error"]["code"] == "unauthorized"


def test_invalid_utf8_is_the_clients_error_not_the_servers(server: RunningServer, all_logs: Everything) -> None:
    all_logs.listen()
    with connect(server.ws) as ws:
        ws.send(b"\xff\xfe{", text=True)
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=5)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1007  # RFC 6455: invalid payload
    time.sleep(0.2)
    about = [r for r in all_logs.records if "UTF-8" in r.getMessage()]
    assert about and all(r.levelno <= logging.INFO and r.exc_info is None for r in about)
    server_side = [r for r in all_logs.records if not r.name.startswith("websockets.client")]
    assert not any(r.exc_info or r.levelno >= logging.ERROR for r in server_side)
    with connect(server.ws) as ws:  # and everyone else is served
        send(ws, type="config", voice=PIPER, format="pcm")
        assert recv_json(ws)["type"] == "ready"


LONG_NUMBER = "1" * 307


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        ("Fine, here it is. " + "1" * 101 + " is the number.", "too long to read"),
        ("Fine, here it is. Say [this](/@@##/) my way.", "alphabet does not have"),
        ('<speak>Fine. <say-as interpret-as="cardinal">' + "9" * 307 + "</say-as></speak>", "too long to read"),
        ('<speak>Fine. <say-as interpret-as="ordinal">' + "9" * 5000 + "</say-as></speak>", "too long to read"),
    ],
    ids=["a-long-number-after-a-sentence", "bad-inline-phonemes-after-a-sentence", "ssml-cardinal", "ssml-ordinal"],
)
def test_whole_text_refused_anywhere_in_it_is_a_400_never_a_cut_off_200(
    server: RunningServer, all_logs: Everything, text: str, refused: str
) -> None:
    """The whole text of a request is checked before its answer begins: what the front end refuses in a
    later sentence used to come as a 200 whose body was cut off (no error event, no done, status 200 in
    the metrics), and a long SSML number as a 500 that logged the caller's digits."""
    for stream_format in ("audio", "sse"):
        body = {"input": text, "voice": PIPER, "response_format": "pcm", "stream_format": stream_format}
        reply = httpx.post(server.base + "/v1/audio/speech", json=body, timeout=30)
        assert reply.status_code == 400 and refused in reply.json()["error"]["message"], reply.text[:300]
    with grpc.insecure_channel(server.grpc) as channel, pytest.raises(grpc.RpcError) as info:
        pb_grpc.VoxServeStub(channel).Synthesize(pb.SynthesizeRequest(text=text, voice=PIPER), timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert not [r for r in all_logs.records if r.levelno >= logging.ERROR], all_logs.lines[-5:]


def test_a_number_too_long_to_read_is_a_clean_400_on_every_transport(server: RunningServer) -> None:
    reply = httpx.post(server.base + "/v1/audio/speech", json={"input": LONG_NUMBER, "voice": PIPER}, timeout=30)
    assert reply.status_code == 400 and "too long to read" in reply.json()["error"]["message"]
    with connect(server.ws) as ws:  # error, then done, and the connection goes on
        send(ws, type="config", voice=PIPER, format="pcm")
        assert recv_json(ws)["type"] == "ready"
        send(ws, type="text", text=LONG_NUMBER)
        send(ws, type="close")
        assert [recv_json(ws)["type"], recv_json(ws)["type"]] == ["error", "done"]
        send(ws, type="ping")
        assert recv_json(ws)["type"] == "pong"
    with grpc.insecure_channel(server.grpc) as channel:
        client = pb_grpc.VoxServeStub(channel)
        with pytest.raises(grpc.RpcError) as info:
            client.Synthesize(pb.SynthesizeRequest(text=LONG_NUMBER, voice=PIPER), timeout=30)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        outbox: queue.Queue[pb.StreamRequest | None] = queue.Queue()

        def requests() -> Iterator[pb.StreamRequest]:
            while (item := outbox.get()) is not None:
                yield item

        responses = client.StreamingSynthesize(requests(), timeout=60)
        outbox.put(pb.StreamRequest(config=pb.StreamConfig(voice=PIPER, format="pcm")))
        outbox.put(pb.StreamRequest(text=pb.TextFragment(text="Fine. " + LONG_NUMBER)))
        outbox.put(pb.StreamRequest(close=pb.CloseUtterance()))
        outbox.put(None)
        kinds = [response.WhichOneof("kind") for response in responses]
        assert kinds[0] == "ready" and "chunk" in kinds and kinds[-2:] == ["error", "done"]


def test_a_websocket_from_another_sites_page_is_refused(make_server: ServerMaker) -> None:
    """A browser page of another site cannot speak through the server (a WebSocket has no CORS preflight):
    its Origin is refused with 4003 unless VOXSERVE_CORS_ORIGINS lists it. Pages of the server's own host,
    at any port, and clients that send no Origin are served."""
    server = make_server(cors_origins=["https://app.example"])
    with connect(server.ws, origin=Origin("https://evil.example")) as ws:
        refused = recv_json(ws)
        assert refused["type"] == "error" and refused["code"] == "forbidden", refused
        assert "VOXSERVE_CORS_ORIGINS" in refused["message"]
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=5)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4003
    for origin in ("https://app.example", "http://127.0.0.1:9", None):
        with connect(server.ws, origin=Origin(origin) if origin else None) as ws:
            send(ws, type="config", voice=PIPER, format="pcm")
            assert recv_json(ws)["type"] == "ready", origin
