from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "webapp.alerts"
    label = "alerts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Rules are checked each time a run records metrics; deliveries are work for a worker (the one door).
        from webapp.alerts import checks, delivery  # noqa: F401  (connects the receiver, registers the work)
