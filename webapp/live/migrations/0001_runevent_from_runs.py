"""RunEvent moves from the runs app to live, table and all: only Django's record of which app owns it changes."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("runs", "0008_run_environments"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="RunEvent",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("seq", models.BigIntegerField()),
                        ("type", models.CharField(max_length=30)),
                        ("payload", models.JSONField(default=dict)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "run",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE, related_name="events", to="runs.run"
                            ),
                        ),
                    ],
                    options={
                        "db_table": "runs_runevent",
                        "ordering": ["seq"],
                        "constraints": [models.UniqueConstraint(fields=("run", "seq"), name="one_event_per_seq")],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
