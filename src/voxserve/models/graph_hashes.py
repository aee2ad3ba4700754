"""The built graphs' expected hashes: a build from a known source must reproduce these files byte for byte.

Update an entry (and bump ``graphs.SPLIT_FORMAT``) only together with a change to what the build writes.
"""

from __future__ import annotations

KOKORO_SHA256 = "6e742170d309016e5891a994e1ce1559c702a2ccd0075e67ef7157974f6406cb"
PIPER_JOE_SHA256 = "58afce0321b8d9c46d7cdf9c16500cc55a793b4220212dba6b70fb788b3baf06"

# (sha256 of the source model, precision) → sha256 of each built file (checked after every build).
KNOWN_HASHES: dict[tuple[str, str], dict[str, str]] = {
    (KOKORO_SHA256, "int8"): {
        "kokoro_front.onnx": "9f22648e26ad88dad22155234fdc9dec84c2bf5ac17384b4b9dc8b029e8c5ad6",
        "kokoro_prosody.onnx": "ba4dfd2ada4c76d372e4d2200b29d2659309c9fee6398ad0b1a3f35bac5b0505",
        "kokoro_stats.onnx": "91f88f4076f48b032d66a8be9f37c0dc31872ed316e13587f137f3132d39a674",
        "kokoro_decoder.onnx": "66aae8450177eba08caa7a45904e3b8dcd03cac58877ff65c8fb9c72b2fcab69",
    },
    (KOKORO_SHA256, "int8-gemm"): {
        "kokoro_front.onnx": "9f22648e26ad88dad22155234fdc9dec84c2bf5ac17384b4b9dc8b029e8c5ad6",
        "kokoro_prosody.onnx": "ba4dfd2ada4c76d372e4d2200b29d2659309c9fee6398ad0b1a3f35bac5b0505",
        "kokoro_stats.onnx": "91f88f4076f48b032d66a8be9f37c0dc31872ed316e13587f137f3132d39a674",
        "kokoro_decoder.onnx": "598c7c58a63c54b3a600c2e487e4a9d7804c939bea2547b2da797dd3e288de87",
    },
    (KOKORO_SHA256, "fp32"): {
        "kokoro_front.onnx": "9f22648e26ad88dad22155234fdc9dec84c2bf5ac17384b4b9dc8b029e8c5ad6",
        "kokoro_prosody.onnx": "ba4dfd2ada4c76d372e4d2200b29d2659309c9fee6398ad0b1a3f35bac5b0505",
        "kokoro_stats.onnx": "f76e3f154b70c015a4b28605fa3335dde9d4ddbe946d5513bff881a4596b07b6",
        "kokoro_decoder.onnx": "fafc360619f0849447c1f236f7325ecc8091752d8d38e619d0b0dbe3c1f10ccf",
    },
    (KOKORO_SHA256, "fp32-conv2d"): {
        "kokoro_front.onnx": "9f22648e26ad88dad22155234fdc9dec84c2bf5ac17384b4b9dc8b029e8c5ad6",
        "kokoro_prosody.onnx": "ba4dfd2ada4c76d372e4d2200b29d2659309c9fee6398ad0b1a3f35bac5b0505",
        "kokoro_stats.onnx": "0784392376707299888d94dc07438268694e517226534a920cd070fa3289314b",
        "kokoro_decoder.onnx": "f519684f723e62ad5920c3182d5be92c24373ab37161f30ed812c92065dd4df8",
    },
    (KOKORO_SHA256, "fp16"): {
        "kokoro_front.onnx": "9f22648e26ad88dad22155234fdc9dec84c2bf5ac17384b4b9dc8b029e8c5ad6",
        "kokoro_prosody.onnx": "ba4dfd2ada4c76d372e4d2200b29d2659309c9fee6398ad0b1a3f35bac5b0505",
        "kokoro_stats.onnx": "d7186737d9bf2f7389a8bd9e207ccbdc05e19280575dfe68dc04d9559db251cf",
        "kokoro_decoder.onnx": "aa6e44fcfe9a933537eb2bbd4bae745ba49d4cef7dc34689f5933bd22d31d797",
    },
    (PIPER_JOE_SHA256, "int8"): {
        "piper_front.onnx": "f61b8ac0b5c99ed701467bb4ffd556e222ba420098defbde52ba8f9e19919e63",
        "piper_decoder.onnx": "544ef686dae8cda69b6af3bc31c1d5eabff2284cf51cffc95b80c298b9472951",
    },
}
