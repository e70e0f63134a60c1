# One image for web, worker and beat (docker-compose.yml). On a GPU host the pinned torch resolves to its CUDA build.
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 TRL_EXPERIMENTAL_SILENCE=1 TRAINYARD_DATA_DIR=/data
RUN python3 -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /app
COPY pyproject.toml README.md ./
COPY webapp webapp
COPY workers workers
COPY envs envs
COPY templates templates
COPY manage.py Procfile ./
RUN pip install torch==2.13.0 && pip install . && python manage.py collectstatic --noinput -v 0
RUN useradd --uid 10001 --create-home trainyard && mkdir -p /data && chown trainyard /data
USER trainyard
EXPOSE 8000
CMD ["daphne", "-b", "0.0.0.0", "-p", "8000", "webapp.asgi:application"]
