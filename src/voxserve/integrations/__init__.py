"""Plugins for voice-agent frameworks, each an optional extra (``pip install voxserve[livekit]`` /
``voxserve[pipecat]``): :mod:`.livekit` (a LiveKit Agents TTS) and :mod:`.pipecat` (a Pipecat TTS
service). They speak to a voxserve server through :mod:`voxserve.client` (and read its error codes through
:func:`voxserve.errors.status_of`); nothing else of voxserve
imports them or the frameworks."""
