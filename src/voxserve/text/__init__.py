"""Text frontend: normalization, segmentation and G2P per language and phoneme alphabet."""

from voxserve.text.frontend import KOKORO_MAX_PHONEMES, Frontend
from voxserve.text.languages import SUPPORTED_LANGS, Alphabet, lang_for_voice, normalize_lang
from voxserve.text.segment import IncrementalSegmenter, TextSegment, split_text

__all__ = [
    "KOKORO_MAX_PHONEMES",
    "SUPPORTED_LANGS",
    "Alphabet",
    "Frontend",
    "IncrementalSegmenter",
    "TextSegment",
    "lang_for_voice",
    "normalize_lang",
    "split_text",
]
