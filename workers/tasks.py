"""Celery tasks: thin wrappers that take ids and call services."""

from __future__ import annotations
