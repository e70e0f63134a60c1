"""RunEvent now belongs to the live app (webapp/live/migrations/0001): the table stays; only the state moves."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0008_run_environments"),
        ("live", "0001_runevent_from_runs"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="RunEvent")],
            database_operations=[],
        ),
    ]
