"""Whether the database's tables are those the code expects: a command run before `manage.py migrate` (the README's
`make demo` migrates first; a user who runs `manage.py bootstrap` by hand may not) says so in one line instead of
ending in a `no such table` traceback."""

from __future__ import annotations

from django.core.management.base import CommandError
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor


def unapplied_migrations(alias: str = DEFAULT_DB_ALIAS) -> list[str]:
    """The migrations the database lacks, as `app.name`."""
    executor = MigrationExecutor(connections[alias])
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    return [f"{migration.app_label}.{migration.name}" for migration, backwards in plan if not backwards]


def require_current_schema(alias: str = DEFAULT_DB_ALIAS) -> None:
    """A CommandError naming the database and the fix when migrations are missing."""
    missing = unapplied_migrations(alias)
    if missing:
        where = connections[alias].settings_dict.get("NAME")
        raise CommandError(f"the database ({where}) lacks {len(missing)} migration(s), the first {missing[0]}: run "
                           "`python manage.py migrate` first")  # fmt: skip
