"""``voxserve bench``: options, the run, and what it leaves behind (tables, JSON, PNGs)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import math
import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from voxserve.errors import InvalidInput

if TYPE_CHECKING:
    from voxserve.benchmark.plots import Level
    from voxserve.benchmark.transports import Clients


RAMP_S = 2.0  # a closed loop's listeners join within this time by default: callers arriving within 1-2 s


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The bench's options on its subparser (imports nothing heavy: the CLI builds this for every command)."""
    from voxserve.benchmark import corpus

    parser.add_argument("--url", default="http://127.0.0.1:8000", help="the server's HTTP base URL (%(default)s)")
    parser.add_argument("--grpc-target", dest="grpc_target", help="gRPC host:port (default: the URL's host, :50051)")
    parser.add_argument("--api-key", dest="api_key", help="sent as a Bearer token on every transport")
    parser.add_argument("--transport", default="http", help="http, ws or grpc; several (http,ws) alternate")
    parser.add_argument(
        "--voice",
        help="voice id; several (a,b) are measured one after another (default: the first the server "
        "lists; the soak: the first of each engine)",
    )
    parser.add_argument("--concurrency", default="1", help="listeners, or a list of levels: 1,4,8,16 (1)")
    parser.add_argument("--unpaced", action="store_true",
                        help="listeners ask again as soon as the audio has arrived, without playing it")  # fmt: skip
    parser.add_argument("--saturation", type=int, metavar="N",
                        help="first measure N unpaced listeners (saturation); levels show their share")  # fmt: skip
    parser.add_argument("--arrival-rate", dest="arrival_rate", help="open loop: Poisson requests per second (list ok)")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds per level (default 30)")
    parser.add_argument("--text-set", dest="text_set", default="short",
                        help=f"a shipped text set: {', '.join(corpus.available())} (default short)")  # fmt: skip
    parser.add_argument(
        "--incremental", type=float, metavar="TOKENS_PER_S", help="send text as word fragments at this rate (ws, grpc)"
    )
    parser.add_argument("--output", default="bench-results",
                        help="folder for results.json and the plots (%(default)s; results.json is written after "
                        "each level, so a stopped run keeps the levels it finished)")  # fmt: skip
    parser.add_argument("--find-capacity", dest="find_capacity", action="store_true", help="search the capacity")
    parser.add_argument("--target-ratio", dest="target_ratio", type=float, default=3.0,
                        help="capacity: P90 first audio limit as a multiple of the lone first audio (3)")  # fmt: skip
    parser.add_argument("--max-stall-rate", dest="max_stall_rate", type=float, default=0.01,
                        help="capacity: share of requests allowed to underrun (0.01)")  # fmt: skip
    parser.add_argument("--max-concurrency", dest="max_concurrency", type=int, default=256,
                        help="capacity search cap (%(default)s)")  # fmt: skip
    parser.add_argument("--soak", type=float, metavar="MINUTES", help="long mixed run watching the server's resources")
    parser.add_argument("--seed", type=int, default=0, help="text order and arrival times")
    parser.add_argument("--ramp", type=float, metavar="SECONDS",
                        help=f"listeners join at random within this time ({RAMP_S:g}, at most half the duration; "
                        "0 sends them all at once)")  # fmt: skip


def _numbers(text: str, kind: type[int] | type[float], name: str) -> list[float]:
    try:
        values = [kind(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise InvalidInput(f"{name} takes numbers separated by commas, got {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise InvalidInput(f"{name} needs positive values, got {text!r}")
    return [float(v) for v in values]


def _check(args: argparse.Namespace) -> tuple[list[str], list[int], list[float]]:
    """Refuse contradictory or impossible options before any request is sent, and fill in the default that
    depends on another option (the ramp: within the duration)."""
    from voxserve.benchmark.transports import TRANSPORTS

    transports = [t.strip() for t in args.transport.split(",") if t.strip()]
    unknown = [t for t in transports if t not in TRANSPORTS]
    if unknown or not transports:
        raise InvalidInput(f"unknown transport {unknown[0] if unknown else ''!r}; choose from {', '.join(TRANSPORTS)}")
    if args.incremental is not None and "http" in transports:
        raise InvalidInput("--incremental needs --transport ws and/or grpc (HTTP takes the whole text at once)")
    if args.incremental is not None and args.incremental <= 0:
        raise InvalidInput("--incremental needs a positive rate")
    if not (math.isfinite(args.duration) and args.duration > 0):
        raise InvalidInput("--duration must be a positive number of seconds")
    if args.soak is not None and not (math.isfinite(args.soak) and args.soak > 0):
        raise InvalidInput("--soak takes a positive number of minutes")
    length, name = (args.soak * 60, "--soak") if args.soak is not None else (args.duration, "--duration")
    if args.ramp is None:
        args.ramp = min(RAMP_S, length / 2)
    if not 0 <= args.ramp < length:
        raise InvalidInput(f"--ramp must be at least 0 and shorter than {name} ({length:g} s)")
    if not (math.isfinite(args.target_ratio) and args.target_ratio >= 1):
        raise InvalidInput("--target-ratio is a multiple of a lone listener's first audio: 1 or more")
    if not 0 <= args.max_stall_rate <= 1:
        raise InvalidInput("--max-stall-rate is a share of requests, from 0 to 1")
    if args.max_concurrency < 1:
        raise InvalidInput("--max-concurrency must be at least 1")
    levels = [int(n) for n in _numbers(args.concurrency, int, "--concurrency")]
    rates = _numbers(args.arrival_rate, float, "--arrival-rate") if args.arrival_rate else []
    if rates and args.find_capacity:
        raise InvalidInput("--find-capacity raises the concurrency; it does not combine with --arrival-rate")
    if args.saturation is not None and (args.saturation < 1 or args.soak is not None):
        raise InvalidInput("--saturation takes a number of unpaced listeners (1 or more), and no --soak")
    return transports, levels, rates


def run(args: argparse.Namespace) -> int:
    transports, levels, rates = _check(args)
    require_extra("bench", "matplotlib")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request would bury the progress line
    from voxserve.benchmark import corpus

    texts = corpus.load(args.text_set)
    output = Path(args.output)
    if output.exists() and not output.is_dir():
        raise InvalidInput(f"--output {output} is a file; give a folder for results.json and the plots")
    output.mkdir(parents=True, exist_ok=True)
    return asyncio.run(_run(args, transports, levels, rates, texts, output))


async def _run(
    args: argparse.Namespace,
    transports: list[str],
    levels: list[int],
    arrival_rates: list[float],
    texts: list[str],
    output: Path,
) -> int:
    from voxserve.benchmark import plots, report, scrape
    from voxserve.benchmark.capacity import CapacityResult, CapacityTarget, find_capacity
    from voxserve.benchmark.soak import soak
    from voxserve.benchmark.stats import LevelSummary, summarize
    from voxserve.benchmark.transports import Clients, TransportError
    from voxserve.benchmark.workload import Plan, Progress, closed_loop, open_loop

    grpc_target = args.grpc_target or f"{urlparse(args.url).hostname or '127.0.0.1'}:50051"
    clients = Clients(args.url, grpc_target, args.api_key)
    quiet = bool(getattr(args, "quiet", False))
    try:
        try:
            catalogue = await clients.catalogue()
        except Exception as exc:  # any failure to reach the server is the same message to the user
            raise InvalidInput(f"cannot read the voice list from {args.url}: {exc}") from None
        if "grpc" in transports or args.soak is not None:  # the soak's faults go over gRPC too
            try:
                await clients.check_grpc()
            except TransportError as exc:
                why = "; the soak provokes faults over gRPC too" if "grpc" not in transports else ""
                raise InvalidInput(f"{exc}{why}; pass the server's gRPC host:port with --grpc-target") from None
        rates = {voice: rate for voice, (_, rate) in catalogue.items()}
        play = not args.unpaced
        voices = _voices(args.voice, catalogue, one_per_engine=args.soak is not None)
        results: dict[str, object] = {
            "command": shlex.join(["voxserve", *sys.argv[1:]]),
            "url": args.url,
            "grpc_target": grpc_target,
            "transports": transports,
            "text_set": args.text_set,
            "incremental_tokens_per_s": args.incremental,
            "duration_s": args.duration,
            "ramp_s": args.ramp,
            "listeners_play": play,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        if args.soak is not None:
            plan = Plan(tuple(transports), tuple(voices), tuple(texts), args.soak * 60, args.incremental,
                        args.seed, args.ramp, play)  # fmt: skip
            soaked = await soak(clients, plan, levels[0], rates, quiet=quiet)
            summary = summarize("soak", levels[0], soaked.records, soaked.wall_s)
            print(report.level_table("+".join(voices), [summary]))
            print(report.soak_table(soaked))
            if why := report.failures(soaked.records):
                print(why)
            results["soak"] = {"summary": summary.to_json(), **soaked.to_json(),
                               "records": [r.to_json() for r in soaked.records]}  # fmt: skip
            plots.soak_resources(soaked, output / "soak_resources.png")
            _write(output, results)
            return 0

        series: dict[str, list[plots.Level]] = {}
        server: dict[str, dict[str, object]] = {}
        capacities: dict[str, CapacityResult] = {}
        saturation: dict[str, plots.Level] = {}

        def keep() -> None:
            """results.json as measured so far: a run stopped (Ctrl-C) keeps the levels it finished."""
            results["series"] = [
                {
                    "voice": voice,
                    "levels": [
                        _level_json(level, server.get(f"{voice} {level.summary.label}", {})) for level in levels_
                    ],
                    "capacity": _capacity_json(capacities.get(voice)),
                    "saturation": _level_json(saturation[voice]) if voice in saturation else None,
                }
                for voice, levels_ in series.items()
            ]
            _write(output, results)

        for voice in voices:
            plan = Plan(tuple(transports), (voice,), tuple(texts), args.duration, args.incremental, args.seed,
                        args.ramp, play)  # fmt: skip
            measured: list[plots.Level] = series.setdefault(voice, [])
            if args.saturation:
                progress = Progress(f"{voice} saturation c={args.saturation}", plan.duration_s, quiet=quiet)
                records, wall = await closed_loop(clients, replace(plan, play=False), args.saturation, rates, progress)
                summary = summarize(f"sat c={args.saturation}", args.saturation, records, wall)
                saturation[voice] = plots.Level(summary, tuple(records))
                keep()

            async def measure(
                n: int,
                rate: float | None = None,
                plan: Plan = plan,
                voice: str = voice,
                measured: list[plots.Level] = measured,
            ) -> LevelSummary:
                label = f"{rate:g}/s" if rate else f"c={n}"
                before = await _scrape(clients)
                progress = Progress(f"{voice} {label}", plan.duration_s, quiet=quiet)
                if rate:
                    records, wall = await open_loop(clients, plan, rate, rates, progress)
                    n = progress.peak
                else:
                    records, wall = await closed_loop(clients, plan, n, rates, progress)
                after = await _scrape(clients)
                summary = summarize(label, n, records, wall)
                measured.append(plots.Level(summary, tuple(records)))
                server[f"{voice} {label}"] = {
                    **scrape.stall_delta(before, after),
                    **({"voxserve_load": after[scrape.LOAD]} if scrape.LOAD in after else {}),
                }
                keep()
                return summary

            if args.find_capacity:
                target = CapacityTarget(args.target_ratio, args.max_stall_rate, args.max_concurrency)
                capacities[voice] = await find_capacity(measure, target)
            elif arrival_rates:
                for rate in arrival_rates:
                    await measure(0, rate)
            else:
                for n in levels:
                    await measure(n)
            measured.sort(key=lambda level: level.summary.concurrency)
            sat = saturation[voice].summary if voice in saturation else None
            print(report.level_table(voice, [level.summary for level in measured], sat))
            if why := report.failures(r for level in measured for r in level.records):
                print(why)
            if voice in capacities:
                print(report.capacity_line(voice, capacities[voice], sat))
        keep()
        written = plots.draw_all(series, output)
        print(f"wrote {output / 'results.json'} and {', '.join(p.name for p in written)}", file=sys.stderr)
        every = [r for levels_ in series.values() for level in levels_ for r in level.records]
        if every and all(r.error for r in every):
            print(f"voxserve bench: every request failed, e.g. {every[0].error}", file=sys.stderr)
            return 1
        return 0
    finally:
        await clients.aclose()


def require_extra(extra: str, *modules: str) -> None:
    """Fail before any work when a module of an optional extra is missing (the server image lacks them)."""
    import importlib.util

    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        raise InvalidInput(f"{', '.join(missing)} not installed: pip install 'voxserve[{extra}]'")


def _voices(wanted: str | None, catalogue: dict[str, tuple[str, int]], one_per_engine: bool) -> list[str]:
    """The voices named, else the catalogue's first voice (the soak: the first of each engine)."""
    if wanted:
        voices = [v.strip() for v in wanted.split(",") if v.strip()]
        unknown = [v for v in voices if v not in catalogue]
        if unknown:
            raise InvalidInput(f"the server has no voice {unknown[0]!r}; it has {', '.join(sorted(catalogue))}")
        return voices
    if not catalogue:
        raise InvalidInput("the server lists no voices")
    if not one_per_engine:
        return list(catalogue)[:1]
    first: dict[str, str] = {}
    for voice, (engine, _) in catalogue.items():
        first.setdefault(engine, voice)
    return list(first.values())


async def _scrape(clients: Clients) -> dict[str, float]:
    """The server's stall and load series now; empty when ``/metrics`` cannot be read."""
    from voxserve.benchmark import scrape

    with contextlib.suppress(Exception):
        return (await scrape.scrape(clients.http, 0.0)).values
    return {}


def _capacity_json(result: object) -> dict[str, object] | None:
    from dataclasses import asdict

    return None if result is None else asdict(result)  # type: ignore[call-overload]


def _level_json(level: Level, server: dict[str, object] | None = None) -> dict[str, object]:
    """One measured level as results.json holds it: its summary, the server's counters over it (none for
    the saturation run), and every request."""
    body: dict[str, object] = {"summary": level.summary.to_json()}
    if server is not None:
        body["server"] = server
    return {**body, "records": [r.to_json() for r in level.records]}


def _write(output: Path, results: dict[str, object]) -> None:
    (output / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
