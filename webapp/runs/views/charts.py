"""What the chart panels need besides the series: their layout (sections, titles, units), the user's own
arrangement of them (pins, hidden panels, order; remembered per user), and a run's reward distribution."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_http_methods

from webapp.core.query_params import text_param
from webapp.runs.distribution import reward_distribution
from webapp.runs.models import ChartLayout
from webapp.runs.panels import panel_layout
from webapp.runs.views.access import run_or_404

MOST_NAMES = 2000  # metric names in one arrangement list
LONGEST_NAME = 100  # MetricPoint.name's length


@login_required
def panels_json(request: HttpRequest) -> JsonResponse:
    """The sections and panels for ?names=a,b,c (the page asks again when a new metric appears live)."""
    names = [n for n in text_param(request.GET, "names", most=200_000).split(",") if n]
    return JsonResponse({"sections": panel_layout(names[:MOST_NAMES])})


def _names(body: dict, field: str) -> list[str]:
    value = body.get(field, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{field} must be a list of metric names")
    if len(value) > MOST_NAMES:
        raise ValueError(f"{field} has {len(value):,} names; at most {MOST_NAMES:,}")
    long = [v for v in value if len(v) > LONGEST_NAME or "\x00" in v]
    if long:
        raise ValueError(f"{field}: {long[0][:40]!r} is not a metric name (at most {LONGEST_NAME} characters)")
    return list(dict.fromkeys(value))  # each once, in the order given


@login_required
@require_http_methods(["GET", "POST"])
def chart_layout_json(request: HttpRequest) -> JsonResponse:
    """GET: the user's arrangement. POST {pinned, hidden, order, collapsed}: replace it (each field optional)."""
    layout, _ = ChartLayout.objects.get_or_create(user=request.user)
    if request.method == "POST":
        try:
            body = json.loads(request.body or b"{}")
            if not isinstance(body, dict):
                raise ValueError("send a JSON object: {pinned, hidden, order}")
            for field in ("pinned", "hidden", "order", "collapsed"):
                if field in body:
                    setattr(layout, field, _names(body, field))
        except (ValueError, UnicodeDecodeError) as exc:
            return JsonResponse({"error": str(exc)}, status=400)
        layout.save()
    return JsonResponse(layout.as_dict())


@login_required
def run_reward_distribution_json(request: HttpRequest, pk: int) -> JsonResponse:
    run = run_or_404(request, pk)
    return JsonResponse({"run": run.pk, **reward_distribution(run)})
