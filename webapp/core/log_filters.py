"""Logging filters. A refused request (403, 404, 400) is the client's business: one line, no traceback; tracebacks
stay for what is really broken (5xx)."""

from __future__ import annotations

import logging


class ClientErrorsWithoutTraceback(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if status is not None and status < 500:
            record.exc_info = None
            record.exc_text = None
        return True
