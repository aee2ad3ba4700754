"""The evaluation's markdown report and its plots."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from voxserve.evaluation.precisions import PrecisionRow
from voxserve.evaluation.run import PeerResult, PeerSummary, SentenceResult, VoiceSummary


@dataclass(frozen=True)
class Extra:
    """The optional parts of a report: peers (``--compare``) and precision variants (``--precisions``)."""

    peers: list[PeerSummary] = field(default_factory=list)
    peer_sentences: list[PeerResult] = field(default_factory=list)
    precisions: list[PrecisionRow] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)


def shown(value: float | None, digits: int = 2) -> str:
    """A score to ``digits`` places, or "-" when it was not measured."""
    return "-" if value is None else f"{value:.{digits}f}"


def plots(summaries: list[VoiceSummary], results: list[SentenceResult], folder: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    fig, ax = plt.subplots(figsize=(7, 3.8))
    names = [f"{s.language} {s.voice}" for s in summaries]
    ax.bar(
        names,
        [s.error_rate for s in summaries],
        color=["tab:blue" if s.metric == "WER" else "tab:orange" for s in summaries],
    )
    ax.set_ylabel("WER (en) / CER (others)")
    ax.set_title("Intelligibility: Whisper's error rate on streamed speech")
    ax.tick_params(axis="x", rotation=45, labelsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(folder / "intelligibility.png", dpi=80)
    plt.close(fig)
    written.append(folder / "intelligibility.png")

    fig, ax = plt.subplots(figsize=(6, 4))
    for voice in dict.fromkeys(r.voice for r in results):
        mine = [r for r in results if r.voice == voice]
        for label, points, marker in (
            ("streamed", [(r.pesq_wb, r.stoi) for r in mine if r.pesq_wb is not None], "o"),
            ("windows", [(r.window_pesq_wb, r.window_stoi) for r in mine if r.window_pesq_wb is not None], "x"),
        ):
            if points:
                xs, ys = zip(*points, strict=True)
                ax.scatter(xs, ys, label=f"{voice} {label}", s=14, marker=marker)
    ax.axvline(3.5, color="grey", linestyle="--", linewidth=1)
    ax.axhline(0.9, color="grey", linestyle="--", linewidth=1)
    ax.set_xlabel("PESQ-WB against whole synthesis")
    ax.set_ylabel("STOI")
    ax.set_title("Streaming fidelity per sentence")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(folder / "fidelity.png", dpi=80)
    plt.close(fig)
    written.append(folder / "fidelity.png")
    return written


def _peer_lines(summaries: list[VoiceSummary], extra: Extra) -> list[str]:
    named = ", ".join(f"{name} {version}" for name, version in extra.versions.items())
    lines = [
        "## Peers",
        "",
        f"The same sentences through peer libraries ({named}), with the same model files and voices, scored "
        "by the same Whisper and DNSMOS. kokoro-onnx phonemizes with espeak-ng; piper-tts is the reference "
        "Piper runtime (run from its own venv as a subprocess). *voxserve vs kokoro-onnx, same phonemes*: "
        "voxserve's windowed stream against kokoro-onnx's one-call synthesis of voxserve's phonemes, the "
        "common reference the two share. Piper has none: both runtimes draw random noise for durations and "
        "the latent, so no two syntheses line up.",
        "",
        "| language | system | voice | n | WER/CER | DNSMOS ovrl | voxserve vs kokoro-onnx, same phonemes: "
        "PESQ-WB median (min) | STOI median (min) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for language in dict.fromkeys(s.language for s in summaries):
        for s in (s for s in summaries if s.language == language):
            lines.append(
                f"| {language} | voxserve ({s.engine}, streamed) | {s.voice} | {s.sentences} | "
                f"{s.metric} {s.error_rate:.3f} | {shown(s.dnsmos_ovrl)} | | |"
            )
        for p in (p for p in extra.peers if p.language == language):
            lines.append(
                f"| {language} | {p.peer} | {p.voice} | {p.sentences} | {p.metric} {p.error_rate:.3f} | "
                f"{shown(p.dnsmos_ovrl)} | {shown(p.voxserve_pesq_median)} ({shown(p.voxserve_pesq_min)}) | "
                f"{shown(p.voxserve_stoi_median, 3)} ({shown(p.voxserve_stoi_min, 3)}) |"
            )
    return [*lines, ""]


def _precision_lines(rows: list[PrecisionRow]) -> list[str]:
    lines = [
        "## Precision variants (`VOXSERVE_PRECISION`)",
        "",
        "Kokoro's decoder at each precision against the shipped int8 graph decoding the same sentence in one "
        "call (every variant shares the int8 front, so durations are identical): decoded *whole*, and "
        "*streamed* in the server's windows. English sentences, voice af_heart.",
        "",
        "| precision | providers | n | whole: PESQ-WB median (min) | STOI median (min) | streamed: PESQ-WB "
        "median (min) | STOI median (min) | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        note = ("not available: " + r.error.replace("|", "/").replace("\n", " ")) if r.error else ""
        lines.append(
            f"| {r.precision} | {r.providers or '-'} | {r.sentences} | {shown(r.whole_pesq_median)} "
            f"({shown(r.whole_pesq_min)}) | {shown(r.whole_stoi_median, 3)} ({shown(r.whole_stoi_min, 3)}) | "
            f"{shown(r.streamed_pesq_median)} ({shown(r.streamed_pesq_min)}) | {shown(r.streamed_stoi_median, 3)} "
            f"({shown(r.streamed_stoi_min, 3)}) | {note} |"
        )
    return [*lines, ""]


def markdown(
    summaries: list[VoiceSummary],
    results: list[SentenceResult],
    command: str,
    images: list[Path],
    extra: Extra | None = None,
) -> str:
    extra = extra or Extra()
    lines = [
        "# voxserve evaluation",
        "",
        f"Command: `{command}`",
        "",
        "Streamed audio is the server's windowed decoding, chunk by chunk. *Streamed vs whole*: against the same "
        "text synthesized whole (`decode_mode=sentence`), after aligning each voiced stretch (pauses between "
        "clauses may differ in length and are not scored); for Kokoro this also carries the two modes' "
        "differences in predicted durations, which time-warp one against the other. Piper has no streamed vs "
        "whole score: its front draws random noise for durations and the latent, so two syntheses never "
        "line up. *Windows vs whole*: one sentence's front decoded in the server's first-segment windows "
        "against the same front decoded in one call (what windowing alone changes). "
        "WER (English, Whisper tiny.en) and CER (others, Whisper base; Chinese compared in simplified "
        "characters) are of the streamed audio. Seams: the sample-to-sample jump at each chunk join over the "
        "signal's median step around it; the baseline is the same ratio at random places inside chunks. "
        "Usual deployment bar: PESQ ≥ 3.5, STOI ≥ 0.9.",
        "",
        "| language | voice | engine | n | WER/CER | streamed vs whole: PESQ-WB median (min) | STOI median (min) "
        "| windows vs whole: PESQ-WB | STOI | DNSMOS ovrl | joins | clicks | seam ratio | baseline |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        lines.append(
            f"| {s.language} | {s.voice} | {s.engine} | {s.sentences} | {s.metric} {s.error_rate:.3f} | "
            f"{shown(s.pesq_median)} ({shown(s.pesq_min)}) | {shown(s.stoi_median, 3)} ({shown(s.stoi_min, 3)}) | "
            f"{shown(s.window_pesq_median)} | {shown(s.window_stoi_median, 3)} | "
            f"{shown(s.dnsmos_ovrl)} | {s.joins} | {s.clicks} | {shown(s.seam_median_ratio)} | "
            f"{shown(s.baseline_median_ratio)} |"
        )
    lines += ["", *(f"![{p.stem}]({p.name})" for p in images), ""]
    if extra.peers:
        lines += _peer_lines(summaries, extra)
    if extra.precisions:
        lines += _precision_lines(extra.precisions)
    lines += ["## Sentences", ""]
    lines += ["| system | voice | text | heard | error | PESQ | STOI |", "|---|---|---|---|---|---|---|"]
    for r in results:
        heard = r.heard.replace("|", "/")
        lines.append(
            f"| voxserve | {r.voice} | {r.text} | {heard} | {r.error_rate:.2f} | {shown(r.pesq_wb)} | "
            f"{shown(r.stoi, 3)} |"
        )
    for p in extra.peer_sentences:
        heard = p.heard.replace("|", "/")
        lines.append(f"| {p.peer} | {p.voice} | {p.text} | {heard} | {p.error_rate:.2f} | - | - |")
    return "\n".join(lines) + "\n"


def as_json(
    summaries: list[VoiceSummary], results: list[SentenceResult], extra: Extra | None = None
) -> dict[str, object]:
    extra = extra or Extra()
    return {
        "voices": [asdict(s) for s in summaries],
        "sentences": [asdict(r) for r in results],
        "peers": [asdict(p) for p in extra.peers],
        "peer_sentences": [asdict(p) for p in extra.peer_sentences],
        "precisions": [asdict(r) for r in extra.precisions],
        "peer_versions": extra.versions,
    }
