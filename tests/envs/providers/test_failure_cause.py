"""The one line that says why a server died, read from logs shaped like the ones upstream servers write."""

from __future__ import annotations

from envs.providers.base import failure_cause

CHAINED = """Traceback (most recent call last):
  File "/srv/openspiel_env/server/app.py", line 3, in <module>
    import pyspiel
ModuleNotFoundError: No module named 'pyspiel'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/srv/openspiel_env/server/app.py", line 5, in <module>
    from models import OpenSpielAction
ModuleNotFoundError: No module named 'models'
"""

NLTK = """Traceback (most recent call last):
  File "/srv/textarena_env/server/environment.py", line 54, in _ensure_nltk_data
    raise exc
LookupError: 
**********************************************************************
  Resource 'words' not found.
  Please use the NLTK Downloader to obtain the resource:

  >>> import nltk
  >>> nltk.download('words')
"""  # noqa: W291


def test_the_missing_package_that_started_the_chain_is_named_not_the_fallback():
    cause = failure_cause(CHAINED)
    assert cause.startswith("ModuleNotFoundError: No module named 'pyspiel'")
    assert "'open_spiel'" in cause and "'models'" not in cause


def test_a_message_on_the_lines_below_is_read_and_nltk_data_is_explained():
    cause = failure_cause(NLTK)
    assert cause.startswith("LookupError: Resource 'words' not found.")
    assert "no PyPI package ships NLTK's 'words'" in cause and "NLTK_DATA" in cause
    assert "\n" not in cause


def test_a_plain_error_is_its_last_line_and_no_exception_is_nothing():
    assert failure_cause("boot\nRuntimeError: refuses to start\n") == "RuntimeError: refuses to start"
    assert failure_cause("all fine\n") == ""
