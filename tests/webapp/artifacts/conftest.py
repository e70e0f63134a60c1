"""The artifact store's two backends, for tests that must hold on both: a folder, and S3 — spoken to over HTTP by
moto's server, since no production S3-compatible store installs here (no MinIO, SeaweedFS or Garage package in the
registries this machine reaches). Everything above the HTTP API (s3fs, botocore, multipart uploads) is real."""

from __future__ import annotations

import socket

import pytest


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def s3_server():
    """A local S3-compatible HTTP server (moto's), with one bucket; its endpoint URL."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    yield endpoint
    server.stop()


@pytest.fixture
def s3_env(s3_server, monkeypatch):
    """The variables a user of an S3-compatible store sets (credentials, endpoint), and a fresh bucket."""
    import uuid

    import boto3

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "trainyard-test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "trainyard-test-secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server)
    bucket = f"trainyard-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", endpoint_url=s3_server).create_bucket(Bucket=bucket)
    return f"s3://{bucket}/deployment"


@pytest.fixture(params=["folder", "s3"])
def store(request, tmp_path):
    """A store of each kind (parametrised)."""
    from webapp.artifacts.store import store_for

    if request.param == "folder":
        return store_for((tmp_path / "store").as_uri())
    return store_for(request.getfixturevalue("s3_env"))
