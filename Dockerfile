# One image for web, workers and beat (docker-compose.yml). On a GPU host the pinned torch resolves to its CUDA
# build; a machine without registry access builds FROM a base image made locally (BASE_IMAGE) and puts the torch
# wheel it wants in deploy/wheels/ (tests/test_docker_compose.py does both).
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
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 TRL_EXPERIMENTAL_SILENCE=1 \
    TRAINYARD_DATA_DIR=/data PATH=/opt/venv/bin:$PATH
WORKDIR /app
# Dependencies first, in their own layer: it is rebuilt only when pyproject.toml (or the torch wheel) changes.
COPY pyproject.toml README.md ./
COPY deploy/wheels/ /tmp/wheels/
RUN python3 -m venv /opt/venv \
    && pip install -q --find-links /tmp/wheels torch==2.13.0 \
    && python -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies'], sep=chr(10))" \
       > /tmp/requirements.txt \
    && pip install -q -r /tmp/requirements.txt \
    && rm -rf /tmp/wheels /tmp/requirements.txt
COPY webapp webapp
COPY workers workers
COPY envs envs
COPY templates templates
COPY manage.py Procfile ./
COPY --from=assets /assets/node_modules node_modules
RUN pip install -q --no-deps . \
    && python manage.py collectstatic --noinput -v 0 \
    && useradd --uid 10001 --create-home trainyard && mkdir -p /data && chown trainyard /data
USER trainyard
EXPOSE 8000
CMD ["daphne", "-b", "0.0.0.0", "-p", "8000", "webapp.asgi:application"]
