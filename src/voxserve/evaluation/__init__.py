"""``voxserve eval``: how the voices sound, measured: intelligibility (Whisper WER/CER per language),
streaming fidelity (PESQ-WB, STOI against whole-sentence synthesis), naturalness (DNSMOS) and seams
(discontinuities at chunk joins), written as a markdown report with plots.

Needs the ``eval`` extra (``pip install 'voxserve[eval]'``); the server image does without it.
"""
