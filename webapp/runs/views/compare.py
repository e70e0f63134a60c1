"""Several runs side by side: the page (overlaid curves, the settings that differ, the summary), its JSON, CSVs."""

from __future__ import annotations

import csv

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import render

from webapp.core.query_params import id_list_param, text_param
from webapp.runs import comparison
from webapp.runs.models import MetricPoint, Run
from webapp.runs.selectors import metric_names
from webapp.runs.views.data import series_payload


def _compare_runs(request: HttpRequest) -> list[Run]:
    # ?runs=12,15,19 (a shareable URL) or ?runs=12&runs=15 (the runs list's checkboxes)
    ids = id_list_param(request.GET.getlist("runs"), "runs", most=comparison.MOST_RUNS)
    return comparison.runs_for_compare(user=request.user, ids=ids)


@login_required
def compare_view(request: HttpRequest) -> HttpResponse:
    runs = _compare_runs(request)
    names = sorted({n for run in runs for n in metric_names(run=run)})
    summary = [comparison.summary_row(r) for r in runs]
    return render(
        request,
        "runs/compare.html",
        {
            "runs": runs,
            "ids": ",".join(str(r.pk) for r in runs),
            "summary": summary,
            "summary_keys": [(k, comparison.SUMMARY_TITLES.get(k, k)) for k in list(summary[0])[3:]],
            "diff": comparison.config_diff(runs),
            "rows": comparison.shared_rows(runs),
            "boot": {"runs": [{"id": r.pk, "name": r.name, "maxSteps": r.max_steps} for r in runs], "names": names},
        },
    )


@login_required
def compare_metrics_json(request: HttpRequest) -> JsonResponse:
    runs = _compare_runs(request)
    return JsonResponse({"runs": {r.pk: series_payload(r, request) for r in runs}})


@login_required
def compare_summary_csv(request: HttpRequest) -> HttpResponse:
    runs = _compare_runs(request)
    rows = [comparison.summary_row(r) for r in runs]
    response = HttpResponse(content_type="text/csv")
    response["Content-Disposition"] = 'attachment; filename="trainyard-summary.csv"'
    writer = csv.DictWriter(response, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return response


class _Echo:
    def write(self, value: str) -> str:
        return value


@login_required
def compare_metrics_csv(request: HttpRequest) -> StreamingHttpResponse:
    """Every raw point of the runs (or of ?names=…), streamed: long runs export without loading all in memory."""
    runs = _compare_runs(request)
    names = [n for n in text_param(request.GET, "names", most=5000).split(",") if n]
    points = MetricPoint.objects.filter(run__in=runs).order_by("run_id", "name", "step")
    if names:
        points = points.filter(name__in=names)
    run_names = {r.pk: r.name for r in runs}
    writer = csv.writer(_Echo())

    def rows():
        yield writer.writerow(["run_id", "run", "metric", "step", "value", "wall_time"])
        for run_id, name, step, value, wall in points.values_list(
            "run_id", "name", "step", "value", "wall_time"
        ).iterator(chunk_size=5000):
            yield writer.writerow([run_id, run_names[run_id], name, step, value, wall])

    response = StreamingHttpResponse(rows(), content_type="text/csv")
    response["Content-Disposition"] = 'attachment; filename="trainyard-metrics.csv"'
    return response
