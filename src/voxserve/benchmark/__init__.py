"""``voxserve bench``: a load generator that plays every stream the way a listener would.

Modules, lowest first: :mod:`corpus` (shipped texts), :mod:`records` (what one request measured),
:mod:`stats` (percentiles, level summaries), :mod:`capacity` (the search), :mod:`transports` (HTTP,
WebSocket, gRPC clients), :mod:`workload` (closed and open loops), :mod:`scrape` (the server's
``/metrics``), :mod:`soak`, :mod:`plots`, :mod:`report`, and :mod:`command` (the CLI entry).
"""
