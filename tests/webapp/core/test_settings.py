from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from webapp import settings as s


def test_booleans_accept_the_usual_spellings(monkeypatch):
    monkeypatch.setenv("X_FLAG", "yes")
    assert s.env_bool("X_FLAG", False) is True
    monkeypatch.setenv("X_FLAG", "0")
    assert s.env_bool("X_FLAG", True) is False


def test_a_bad_boolean_fails_loudly(monkeypatch):
    monkeypatch.setenv("X_FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="X_FLAG"):
        s.env_bool("X_FLAG", False)


def test_a_bad_integer_fails_loudly(monkeypatch):
    monkeypatch.setenv("X_NUM", "ten")
    with pytest.raises(ImproperlyConfigured, match="not an integer"):
        s.env_int("X_NUM", 1)
    monkeypatch.setenv("X_NUM", "-3")
    with pytest.raises(ImproperlyConfigured, match="at least 0"):
        s.env_int("X_NUM", 1, minimum=0)


def test_choices_are_checked(monkeypatch):
    monkeypatch.setenv("X_KIND", "kubernetes")
    with pytest.raises(ImproperlyConfigured, match="must be one of"):
        s.env_choice("X_KIND", "process", {"process", "docker"})


def test_celery_spells_unix_sockets_its_own_way():
    assert s.celery_redis_url("unix:///tmp/r.sock") == "redis+socket:///tmp/r.sock"
    assert s.celery_redis_url("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"


def test_lists_split_on_commas(monkeypatch):
    monkeypatch.setenv("X_HOSTS", "a.example, b.example,")
    assert s.env_list("X_HOSTS", []) == ["a.example", "b.example"]


def test_debug_is_off_unless_asked():
    from django.conf import settings

    assert settings.DEBUG is False
