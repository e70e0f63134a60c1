# One image for web, workers and beat (docker-compose.yml). On a GPU host the pinned torch resolves to its CUDA
# build; a machine without registry access builds FROM a base image made locally (BASE_IMAGE) and points
# TORCH_FIND_LINKS at the torch wheel it wants (tests/test_docker_compose.py does both).
ARG BASE_IMAGE=python:3.11-slim

# Front-end libraries (uPlot) from npm, at build time: the image serves them itself, never from a CDN.
FROM ${BASE_IMAGE} AS assets
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
RUN apt-get update -q && apt-get install -y -q --no-install-recommends nodejs npm ca-certificates >/dev/null \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /assets
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error

FROM ${BASE_IMAGE}
# Where pip may find a torch wheel first (a folder or a page of links); empty: the registry's, as pinned.
ARG TORCH_FIND_LINKS=
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 TRL_EXPERIMENTAL_SILENCE=1 \
    TRAINYARD_DATA_DIR=/data PATH=/opt/venv/bin:$PATH
# Few layers after the big one: on some storage drivers (vfs) every layer is a full copy of the image.
RUN useradd --uid 10001 --create-home trainyard && mkdir -p /opt/venv /app /data \
    && chown trainyard /opt/venv /app /data
USER trainyard
WORKDIR /app
EXPOSE 8000
CMD ["daphne", "-b", "0.0.0.0", "-p", "8000", "webapp.asgi:application"]
# Dependencies in their own layer, rebuilt only when pyproject.toml changes.
COPY pyproject.toml ./
RUN python3 -m venv /opt/venv \
    && pip install -q ${TORCH_FIND_LINKS:+--find-links "$TORCH_FIND_LINKS"} torch==2.13.0 \
    && python -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies'], sep=chr(10))" \
       > /tmp/requirements.txt \
    && pip install -q -r /tmp/requirements.txt && rm /tmp/requirements.txt
COPY --from=assets /assets/node_modules node_modules
COPY --chown=trainyard . .
RUN pip install -q --no-deps . && python manage.py collectstatic --noinput -v 0
