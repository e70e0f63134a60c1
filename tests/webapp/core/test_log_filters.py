"""A 403 is one log line; a 500 keeps its traceback."""

from __future__ import annotations

import io
import logging

from django.urls import reverse


def test_a_refused_request_logs_one_line_without_a_traceback(client_for, charlie, acme, settings):
    from webapp.catalog.models import Environment
    from webapp.core.log_filters import ClientErrorsWithoutTraceback

    env = Environment.objects.create(team=acme, name="Private", slug="private", visibility="shared")
    from tests.webapp.catalog.conftest import make_version

    version = make_version(env)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(ClientErrorsWithoutTraceback())
    logging.getLogger("django.request").addHandler(handler)
    try:
        assert client_for(charlie).post(reverse("catalog:version-trust", args=[env.pk, version.pk])).status_code == 403
    finally:
        logging.getLogger("django.request").removeHandler(handler)
    text = stream.getvalue()
    assert "Forbidden" in text and "Traceback" not in text and len(text.strip().splitlines()) == 1


def test_server_errors_keep_their_traceback():
    from webapp.core.log_filters import ClientErrorsWithoutTraceback

    try:
        raise RuntimeError("broken")
    except RuntimeError:
        import sys

        info = sys.exc_info()
    record = logging.LogRecord("django.request", logging.ERROR, __file__, 1, "Internal Server Error", (), info)
    record.status_code = 500
    assert ClientErrorsWithoutTraceback().filter(record) and record.exc_info is info
    record.status_code = 403
    assert ClientErrorsWithoutTraceback().filter(record) and record.exc_info is None


def test_the_console_handler_uses_the_filter():
    handlers = logging.getLogger().handlers
    assert any(any(type(f).__name__ == "ClientErrorsWithoutTraceback" for f in h.filters) for h in handlers)
