"""Command line: ``voxserve say | voices | models | serve | bench | eval``."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from dotenv import dotenv_values
from pydantic import ValidationError

from voxserve.errors import InvalidInput, VoxError
from voxserve.limits import MAX_OUTPUT_RATE as MAX_RATE
from voxserve.limits import MIN_OUTPUT_RATE as MIN_RATE
from voxserve.limits import check_sample_rate, check_speed
from voxserve.settings import Settings, unknown_variables

# File extensions that name an output format; other extensions say nothing about it.
_FORMAT_BY_EXTENSION = {
    "pcm": "pcm",
    "raw": "pcm",
    "wav": "wav",
    "mp3": "mp3",
    "opus": "opus",
    "ogg": "opus",
    "flac": "flac",
    "aac": "aac",
    "mulaw": "mulaw",
    "ulaw": "mulaw",
}


# Settings a command-line flag may set (``--max-streams``); the rest come from the environment only.
_FLAGS = (
    "cache_dir",
    "model_path",
    "host",
    "port",
    "grpc_port",
    "intra_op_threads",
    "max_load",
    "max_streams",
    "max_queue",
    "tls_certfile",
    "tls_keyfile",
    "rate_limit_per_minute",
    "shutdown_grace_s",
    "default_voice",
    "lexicon",
)


def _settings(args: argparse.Namespace) -> Settings:
    overrides: dict[str, object] = {}
    for field in _FLAGS:
        value = getattr(args, field, None)
        if value is not None:
            overrides[field] = value
    for field in ("api_keys", "cors_origins"):
        if getattr(args, field, None):
            overrides[field] = getattr(args, field)
    if getattr(args, "log_text", False):
        overrides["log_text"] = True
    engines = getattr(args, "engines", None)
    if engines:
        overrides["engines"] = engines.split(",")
    dotenv = {name: value for name, value in dotenv_values(".env").items() if value is not None}
    unknown = unknown_variables({**dotenv, **os.environ})
    if unknown:
        raise VoxError("; ".join(unknown) + "; see the README's table of settings")
    return Settings(**overrides)  # type: ignore[arg-type]


def _output_format(fmt: str | None, output: str | None) -> str:
    """The audio format: ``--format``, else the one the output's extension names, else WAV.

    Both given and disagreeing (``-f flac -o x.wav``) is refused: the file would lie about its contents.
    """
    suffix = Path(output).suffix.lstrip(".").lower() if output else ""
    implied = _FORMAT_BY_EXTENSION.get(suffix)
    if fmt is None:
        return implied or suffix or "wav"
    if implied is not None and implied != fmt.strip().lower():
        raise VoxError(f"--format {fmt} does not match the extension of {output}; change one of them")
    return fmt


def _check_output(output: str) -> None:
    """Fail early, with one line, when ``output`` cannot be written (before the models load)."""
    path = Path(output)
    if path.is_dir():
        raise VoxError(f"output {output} is a directory; give a file name")
    parent = path.parent
    if not parent.is_dir():
        raise VoxError(f"cannot write {output}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise VoxError(f"cannot write {output}: directory {parent} is not writable")


def _open_partial(target: Path) -> tuple[Path, BinaryIO]:
    """A new file next to ``target`` to write into; renamed over it only once synthesis succeeded,
    so a failure leaves an existing ``target`` untouched."""
    partial = target.with_name(f".{target.name}.{os.getpid()}.part")
    try:
        sink = partial.open("xb")
        if target.exists():
            os.chmod(partial, stat.S_IMODE(target.stat().st_mode))
    except OSError as exc:
        raise VoxError(f"cannot write {target}: {exc.strerror or exc}") from None
    return partial, sink


async def _say(args: argparse.Namespace, settings: Settings, text: str) -> int:
    """Speak ``text`` the way the server does: a request the policy resolves, then one utterance of the
    speech service (session, resampler, encoder) written to a file or stdout."""
    from voxserve.policy import SpeechRequest, whole_file
    from voxserve.runtime import Runtime
    from voxserve.server.state import ServerState

    logging.getLogger("voxserve.access").setLevel(logging.WARNING)  # the server's per-utterance log line
    runtime = Runtime(settings)
    state = ServerState.build(settings, runtime)
    await asyncio.to_thread(runtime.load, False)  # no warm-up: one utterance would not repay it
    await state.lifecycle.load(runtime)  # the runtime is loaded already: this marks the service ready
    try:
        fmt = _output_format(args.format, args.output)
        service = state.service
        asked = SpeechRequest(
            voice=args.voice,
            text=text,
            lang=args.lang,
            speed=args.speed,
            format=fmt,
            sample_rate=args.sample_rate,
            phonemes=args.phonemes,
            whole_file=whole_file(fmt),  # a file: FLAC with its length in the header
        )
        request = service.validate(asked, needs_text=True)
        target = Path(args.output) if args.output else None
        if target is None and args.play:
            target = Path(tempfile.mkstemp(suffix=f".{request.format}")[1])
        async with state.admission.slot(service.price(request)):
            utterance = service.speak(request, "cli")
            partial, sink = _open_partial(target) if target else (None, sys.stdout.buffer)
            try:
                async for chunk in utterance.chunks():
                    sink.write(chunk.audio)
            except BaseException:
                if partial:
                    sink.close()
                    partial.unlink(missing_ok=True)
                raise
        if target and partial:
            sink.close()
            os.replace(partial, target)
        summary = utterance.summary()
        print(
            f"{summary.audio_s:.2f} s of audio in {summary.chunks} chunks; first audio after "
            f"{summary.ttfa_ms or 0:.0f} ms; real-time factor {summary.rtf or 0:.2f}",
            file=sys.stderr,
        )
        if args.play and target:
            _play(target)
        return 0
    finally:
        runtime.close()


def _play(path: Path) -> None:
    for player in (
        ["ffplay", "-autoexit", "-nodisp", "-loglevel", "quiet"],
        ["aplay", "-q"],
        ["afplay"],
        ["play", "-q"],
    ):
        if shutil.which(player[0]):
            subprocess.run([*player, str(path)], check=False)
            return
    print(f"no audio player found (ffplay, aplay, afplay, play); audio is in {path}", file=sys.stderr)


def cmd_say(args: argparse.Namespace) -> int:
    text = " ".join(args.text) if args.text else sys.stdin.read()
    from voxserve.policy import engines_for

    if not args.engines:
        args.engines = ",".join(engines_for(args.voice))
    settings = _settings(args)
    if args.output is None and not args.play and sys.stdout.isatty():
        raise VoxError("refusing to write audio to a terminal; pass -o FILE or --play")
    check_sample_rate(args.sample_rate)  # what the request policy checks, before the models load
    check_speed(args.speed)
    if not text.strip():
        raise InvalidInput("input text is empty: pass the text as arguments or on standard input")
    _output_format(args.format, args.output)  # a mismatch fails before the models load
    if args.output is not None:
        _check_output(args.output)
    return asyncio.run(_say(args, settings, text))


def cmd_voices(args: argparse.Namespace) -> int:
    from voxserve.runtime import Runtime

    runtime = Runtime(_settings(args))
    runtime.load(warm=False)
    try:
        print(f"{'voice':<20} {'language':<8} {'gender':<7} engine")
        for voice in runtime.voices():
            print(f"{voice.id:<20} {voice.lang:<8} {voice.gender:<7} {voice.engine}")
    finally:
        runtime.close()
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from voxserve.cli_models import cmd_models as models

    return models(args, _settings(args))


def cmd_serve(args: argparse.Namespace) -> int:
    from voxserve.server import serve

    serve(_settings(args))
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from voxserve.benchmark.command import run

    return run(args)


def cmd_eval(args: argparse.Namespace) -> int:
    from voxserve.evaluation.command import run

    return run(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="voxserve", description="Real-time streaming text-to-speech.")
    parser.add_argument("--cache-dir", dest="cache_dir", help="model cache (default ~/.cache/voxserve)")
    parser.add_argument("--model-path", dest="model_path", help="local directory with model files")
    parser.add_argument("--threads", dest="intra_op_threads", type=int, help="ONNX Runtime threads per session")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress log (serve, models fetch)")
    sub = parser.add_subparsers(dest="command", required=True)

    say = sub.add_parser("say", help="synthesize text to a file, stdout or the speaker")
    say.add_argument("text", nargs="*", help="text to speak (default: read stdin)")
    say.add_argument("-v", "--voice", default="af_heart", help="voice id, blend 'a:0.7+b:0.3', or en_US-joe-medium")
    say.add_argument("-o", "--output", help="output file (format from its extension); replaced only on success")
    say.add_argument(
        "-f",
        "--format",
        help="pcm, wav, mp3, opus, flac, aac, mulaw (default: from the -o extension, else wav); "
        "refused when it contradicts the -o extension",
    )
    say.add_argument("-s", "--speed", type=float, default=1.0, help="0.5 to 2.0")
    say.add_argument("-l", "--lang", help="language code (default: from the voice)")
    say.add_argument(
        "-r", "--sample-rate", dest="sample_rate", type=int, help=f"output sample rate, {MIN_RATE} to {MAX_RATE} Hz"
    )
    say.add_argument("--phonemes", action="store_true", help="the input is phonemes, not text")
    say.add_argument("--lexicon", help="pronunciation dictionary (JSON; docs/protocol.md)")
    say.add_argument("--play", action="store_true", help="play the result")
    say.add_argument("--engines", help=argparse.SUPPRESS)
    say.set_defaults(func=cmd_say)

    voices = sub.add_parser("voices", help="list voices")
    voices.set_defaults(func=cmd_voices)

    models = sub.add_parser("models", help="fetch, list or encrypt model files")
    models.add_argument("action", choices=["fetch", "list", "encrypt"])
    models.add_argument(
        "names", nargs="*", default=[], help="catalog voices to fetch instead of the built-in models (piper:<voice>)"
    )
    models.add_argument("--force", action="store_true", help="fetch again even if present")
    models.add_argument(
        "--no-learn", dest="no_learn", action="store_true", help="skip learning the voices' decoder statistics"
    )
    models.add_argument("--key-file", dest="key_file", help="encrypt: file of the AES-256 key (64 hex characters)")
    models.add_argument(
        "--generate-key", dest="generate_key", action="store_true", help="encrypt: write a new key to --key-file first"
    )
    models.set_defaults(func=cmd_models)

    serve = sub.add_parser(
        "serve",
        help="run the HTTP/WebSocket/gRPC server",
        description="Every option is also a setting: VOXSERVE_<NAME> in the environment or .env "
        "(e.g. VOXSERVE_PORT, VOXSERVE_API_KEYS=k1,k2, MODEL_PATH, STREAM_BUFFER_MS); see the README's table.",
    )
    serve.add_argument("--host", help="bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="HTTP port (default 8000)")
    serve.add_argument("--grpc-port", dest="grpc_port", type=int, help="gRPC port (default 50051, 0 = off)")
    serve.add_argument("--engines", help="comma-separated engines to load (kokoro,piper)")
    serve.add_argument("--api-key", dest="api_keys", action="append", help="accept this API key (repeatable)")
    serve.add_argument(
        "--max-load",
        dest="max_load",
        type=float,
        help="share of the cores admission books streams up to, by costs measured here (default 0.8)",
    )
    serve.add_argument(
        "--max-streams", dest="max_streams", type=int, help="ceiling on concurrent streams, whatever they cost"
    )
    serve.add_argument("--max-queue", dest="max_queue", type=int, help="requests waiting for a stream slot")
    serve.add_argument("--tls-cert", dest="tls_certfile", help="TLS certificate (PEM)")
    serve.add_argument("--tls-key", dest="tls_keyfile", help="TLS private key (PEM)")
    serve.add_argument("--cors-origin", dest="cors_origins", action="append", help="allowed CORS origin (repeatable)")
    serve.add_argument("--rate-limit", dest="rate_limit_per_minute", type=int, help="requests/minute per client")
    serve.add_argument("--shutdown-grace", dest="shutdown_grace_s", type=float, help="seconds to drain on SIGTERM")
    serve.add_argument("--default-voice", dest="default_voice", help="voice when a request names none")
    serve.add_argument("--lexicon", help="pronunciation dictionary (JSON; docs/protocol.md)")
    serve.add_argument("--log-text", dest="log_text", action="store_true", help="include input text in access logs")
    serve.set_defaults(func=cmd_serve)

    from voxserve.benchmark.command import add_arguments

    bench = sub.add_parser("bench", help="load-test a running server (first audio, underruns, capacity, soak)")
    add_arguments(bench)
    bench.set_defaults(func=cmd_bench)

    from voxserve.evaluation.command import add_arguments as add_eval_arguments

    evaluate = sub.add_parser("eval", help="score the voices: intelligibility, streaming fidelity, naturalness, seams")
    add_eval_arguments(evaluate)
    evaluate.set_defaults(func=cmd_eval)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # a server and a model fetch report what they do; the other commands print their results, and their
    # loading's notes (the decoder precision, each G2P built, the audit record) would only bury them
    chatty = (args.func is cmd_serve or getattr(args, "action", None) == "fetch") and not args.quiet
    logging.basicConfig(level=logging.INFO if chatty else logging.WARNING, format="%(levelname)s %(message)s")
    try:
        code = int(args.func(args))
        sys.stdout.flush()  # here, where a reader gone away is caught below, not at the interpreter's exit
        return code
    except VoxError as exc:
        print(f"voxserve: error: {exc.message}", file=sys.stderr)
        return 2
    except ValidationError as exc:  # a setting out of range, from the environment or a flag
        for error in exc.errors():
            message = error["msg"].removeprefix("Value error, ")
            fields = [str(part) for part in error["loc"] if not isinstance(part, int)]  # not a list's index
            if not fields:  # a check across settings: its message names them
                print(f"voxserve: error: settings: {message}", file=sys.stderr)
                continue
            name = fields[0].lower().removeprefix("voxserve_")  # an alias is the variable's own name
            where = f"VOXSERVE_{name.upper()}" + (", or its flag" if name in _FLAGS else "")
            print(f"voxserve: error: setting {name} ({where}): {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (``voxserve voices | head``): nothing more to write
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush fails quietly
        return 0


if __name__ == "__main__":
    sys.exit(main())
