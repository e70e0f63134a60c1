"""Celery workers: `celery -A workers worker -Q gpu -c 1` finds the app here."""

from __future__ import annotations

from workers.celery_app import app

__all__ = ["app"]
