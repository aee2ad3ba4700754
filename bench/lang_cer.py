"""Character error rate per language: Kokoro speaks held-out sentences, multilingual Whisper base transcribes.

    python -m bench.lang_cer                       # every language in SENTENCES
    python -m bench.lang_cer --langs ja --show     # one language, with each transcript

The sentences have no digits (Whisper writes numbers as digits) and are used for no tuning.
"""

from __future__ import annotations

import argparse
import asyncio
import json

import numpy as np

from voxserve.evaluation.asr import cer, load_whisper, transcribe
from voxserve.runtime import Runtime
from voxserve.settings import Settings
from voxserve.tuning import Tuning
from voxserve.types import SynthesisParams

VOICES = {"ja": "jf_alpha", "zh": "zf_xiaobei", "fr": "ff_siwis", "es": "ef_dora", "it": "if_sara", "pt": "pf_dora"}

SENTENCES: dict[str, list[str]] = {
    "ja": [
        "明日の朝は雨が降るそうです。",
        "午後から友達と買い物に行きます。",
        "この電車は東京駅に止まりますか。",
        "駅の近くに新しいパン屋ができました。",
        "昨日は遅くまで仕事をしていました。",
        "窓を開けてもいいですか。",
        "週末は家族と公園で過ごしました。",
        "すみません、トイレはどこですか。",
        "冷蔵庫に牛乳がまだ残っています。",
        "先生の説明はとても分かりやすかった。",
        "今夜は早く寝るつもりです。",
        "駐車場はホテルの裏にあります。",
        "彼女は毎朝コーヒーを飲みます。",
        "会議は来週の月曜日に延期になりました。",
        "子供たちが庭で元気に遊んでいる。",
        "この料理は少し辛いですね。",
        "図書館で本を借りてきました。",
        "荷物が重いので手伝ってください。",
        "天気がいいので散歩に出かけましょう。",
        "財布を家に忘れてしまいました。",
        "夏休みに北海道へ旅行する予定です。",
        "部屋の電気を消してから出かけてください。",
        "新しい靴を買ったばかりです。",
        "病院の予約を変更したいのですが。",
    ],
    "zh": [
        "我们明天早上在学校门口见面。",
        "这家饭馆的菜又便宜又好吃。",
        "请把窗户关上，外面风很大。",
        "他每天晚上都会给妈妈打电话。",
    ],
    "fr": [
        "Nous irons au marché demain matin.",
        "Pouvez-vous fermer la porte, s'il vous plaît ?",
        "Le train part dans une heure.",
        "Ma sœur aime beaucoup lire des romans.",
    ],
    "es": [
        "Mañana vamos a comer con mis padres.",
        "¿Dónde está la estación de tren?",
        "El café de esta tienda es muy bueno.",
        "Hace mucho frío esta noche.",
    ],
    "it": [
        "Domani mattina andiamo al mercato.",
        "Puoi chiudere la finestra, per favore?",
        "Il treno parte tra un'ora.",
        "Mia sorella legge molti libri.",
    ],
    "pt": [
        "Amanhã vamos almoçar com os meus pais.",
        "Onde fica a estação de trem?",
        "O café desta loja é muito bom.",
        "Está fazendo muito frio esta noite.",
    ],
}


async def speak(runtime: Runtime, text: str, voice: str) -> tuple[np.ndarray, int]:
    session = runtime.open_session(SynthesisParams(voice=voice), pace=False)
    session.push_text(text)
    session.close()
    chunks = [chunk.samples async for chunk in session]
    return np.concatenate(chunks), session.sample_rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--langs", default=",".join(SENTENCES), help="comma-separated languages")
    parser.add_argument("--show", action="store_true", help="print each sentence's transcript")
    parser.add_argument("--decode-mode", choices=["windowed", "sentence"], default="windowed")
    args = parser.parse_args()
    settings = Settings(engines=["kokoro"], warm_languages=["none"])
    runtime = Runtime(settings, Tuning(decode_mode=args.decode_mode))  # Settings would ignore decode_mode
    runtime.load(warm=False)
    whisper = load_whisper("base")
    results: dict[str, float] = {}
    try:
        for lang in args.langs.split(","):
            voice = VOICES[lang]
            scores = []
            for text in SENTENCES[lang]:
                samples, rate = asyncio.run(speak(runtime, text, voice))
                heard = transcribe(whisper, samples, rate, lang)
                scores.append(cer(text, heard, lang))
                if args.show:
                    print(f"{scores[-1]:.3f}  {text}  →  {heard}")
            results[f"{lang} {voice}"] = round(float(np.mean(scores)), 3)
            print(f"{lang} {voice}: CER {results[f'{lang} {voice}']:.3f} over {len(scores)} sentences", flush=True)
    finally:
        runtime.close()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
