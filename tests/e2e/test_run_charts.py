"""Reading a recorded run's charts in a real headless Chromium: sections in the order a GRPO user reads them, one
metric per panel, a search box, axis labels that say what the values are (1e-4 and millions), the held-out
evaluation drawn as a band with its baseline and linked to its evaluations, the reward distribution, and a user's
pins and hidden panels remembered after a reload; the compare page draws the same panels with the runs overlaid."""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import ARTIFACTS, log_in, member_who_logs_in
from tests.webapp.runs.conftest import recorded_run

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def dana_runs(acme):
    """dana, a member of Acme, and two recorded runs (made before the browser's event loop starts)."""
    user = member_who_logs_in(acme)
    first = recorded_run(acme, user, steps=30, max_steps=40)
    second = recorded_run(acme, user, steps=20, max_steps=40)
    evaluations = {e.step: e.pk for e in first.evaluations.all()}
    return first, second, evaluations


def visible_panels(page, section=None) -> list[str]:
    where = f'[data-section="{section}"] ' if section else ""
    return page.eval_on_selector_all(f"{where}.chart:not([hidden])", "els => els.map(e => e.dataset.metric)")


def ticks(page, metric: str) -> list[str]:
    return page.evaluate(f"() => JSON.parse(document.querySelector('.chart[data-metric=\"{metric}\"]').dataset.yTicks)")


def run_page(browser, base_url: str, run):
    """dana's browser on the run's page; the page's script errors are collected in the list returned with it."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    log_in(page, base_url, "dana")
    page.goto(f"{base_url}/runs/{run.pk}/")
    return page, errors


def test_a_recorded_runs_charts_read_right(dana_runs, daphne_server, browser):
    run, other, evaluations = dana_runs
    page, errors = run_page(browser, daphne_server, run)
    page.wait_for_selector('.chart[data-metric="reward"] canvas')

    sections = page.eval_on_selector_all("#charts .panel-section", "els => els.map(e => e.dataset.section)")
    assert sections == ["reward", "eval", "tools", "policy", "completions", "system", "trl_eval"]
    # TRL's own eval-loop logs come last, folded until opened.
    assert page.locator('[data-section="trl_eval"] canvas').count() == 0
    page.click('[data-section="trl_eval"] .fold')
    page.wait_for_selector('[data-section="trl_eval"] .chart[data-metric="eval/loss"] canvas')
    assert visible_panels(page, "reward")[:3] == ["reward", "reward/distribution", "frac_reward_zero_std"]
    assert "reward_std" not in visible_panels(page), "the reward's spread is its band, not a chart"
    assert page.inner_text('.chart[data-metric="kl"] h4') == "KL divergence to the reference"
    page.wait_for_function(
        "() => document.querySelector('.chart[data-metric=\"reward/distribution\"]').dataset.columns === '30'"
    )

    # Axis labels: a learning rate around 1e-4 in scientific notation, tokens in millions, a ratio in percent.
    lr = ticks(page, "learning_rate")
    assert lr and all(re.fullmatch(r"-?\d+(\.\d+)?e-\d+|0", t) for t in lr) and len(set(lr)) == len(lr), lr
    tokens = ticks(page, "num_tokens")
    assert tokens and all(t.endswith("M") for t in tokens) and len(set(tokens)) == len(tokens), tokens
    assert all(t.endswith("%") for t in ticks(page, "clip_ratio/region_mean"))
    x_max = page.evaluate("() => window.trainyardRun.charts['reward'].plot.scales.x.max")
    assert x_max == 40, "the x axis spans the run's steps, not the points so far"

    # The held-out evaluation: mean, its interval as a band, the baseline as a line; a point opens its evaluation.
    heldout = page.evaluate("""() => { const p = window.trainyardRun.charts['eval/mean_reward'].plot;
        return {labels: p.series.map(s => s.label), bands: p.bands.length, baseline: p.data[4]}; }""")
    assert heldout["labels"][1:] == ["mean", "low (95 %)", "high (95 %)", "baseline"] and heldout["bands"] == 1
    assert set(heldout["baseline"]) == {0.2}

    # Search filters panels by name.
    page.fill("#chart-search", "clip")
    assert visible_panels(page) == ["clip_ratio/region_mean"]
    assert page.eval_on_selector_all(".panel-section:not([hidden])", "els => els.length") == 1
    page.fill("#chart-search", "")

    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "run-charts-after.png"), full_page=True)

    # Pin KL and hide the token count; both are remembered for dana after a reload.
    saved = page.evaluate("() => document.body.dataset.layoutSaved || ''")
    page.hover('.chart[data-metric="kl"]')
    page.click('.chart[data-metric="kl"] .pin')
    page.wait_for_function(f"() => (document.body.dataset.layoutSaved || '') !== '{saved}'")
    saved = page.evaluate("() => document.body.dataset.layoutSaved")
    page.hover('.chart[data-metric="num_tokens"]')
    page.click('.chart[data-metric="num_tokens"] .hide')
    page.wait_for_function(f"() => document.body.dataset.layoutSaved !== '{saved}'")
    page.reload()
    page.wait_for_selector('.chart[data-metric="reward"] canvas')
    first = page.eval_on_selector("#charts .panel-section", "e => e.dataset.section")
    assert first == "pinned" and visible_panels(page, "pinned") == ["kl"]
    assert visible_panels(page, "trl_eval") == ["eval/loss"], "the section dana opened stays open"
    assert "num_tokens" not in visible_panels(page) and "Tokens seen" in page.inner_text("#charts-hidden")

    # A click on the final eval's point opens that evaluation.
    box = page.evaluate("""() => { const p = window.trainyardRun.charts['eval/mean_reward'].plot;
        const r = p.over.getBoundingClientRect(); p.over.scrollIntoView();
        const r2 = p.over.getBoundingClientRect();
        return {x: r2.left + p.valToPos(30, 'x'), y: r2.top + p.valToPos(0.6, 'y')}; }""")
    page.mouse.move(box["x"], box["y"])
    page.mouse.click(box["x"], box["y"])
    page.wait_for_url(f"**/evals/{evaluations[30]}/")

    # Compare: the same sections, each panel overlaying both runs.
    page.goto(f"{daphne_server}/runs/compare/?runs={run.pk},{other.pk}")
    page.wait_for_selector('.chart[data-metric="reward"] canvas')
    assert page.eval_on_selector("#charts .panel-section", "e => e.dataset.section") == "pinned", "dana's pins too"
    labels = page.evaluate("() => window.trainyardCompare.charts['reward'].plot.series.slice(1).map(s => s.label)")
    assert labels == [run.name, other.name]
    assert "Final reward" in page.inner_text("#summary thead")
    style = page.eval_on_selector(
        "#summary th.metric", "e => [getComputedStyle(e).textTransform, getComputedStyle(e).overflowWrap]"
    )
    assert style == ["none", "normal"], "a column's title breaks between words, never inside one"
    page.screenshot(path=str(ARTIFACTS / "compare-charts-after.png"), full_page=True)
    assert not errors, errors


def test_the_trajectory_viewer_colours_a_completion_by_its_recorded_values(dana_runs, daphne_server, browser):
    run, _, _ = dana_runs
    page, errors = run_page(browser, daphne_server, run)
    page.wait_for_selector('#episodes .episode[data-step="30"]')
    page.wait_for_function("() => document.querySelectorAll('#episodes .token-link').length === 4")  # one group a step

    # From the GRPO group view, as a user reads a group side by side.
    page.locator("#episodes .episode").filter(has_text="step 30 · group 0.1 ").locator(".meta").click(
        position={"x": 4, "y": 4}
    )
    page.wait_for_selector("#group-view .token-link")
    page.click("#group-view .episode:nth-child(2) .token-link")  # index 1: reward 1.0, a positive advantage
    page.wait_for_selector("#tokens .tok")

    def spans():
        return page.eval_on_selector_all(
            "#tokens .tok",
            """els => els.map(e => {
            const m = getComputedStyle(e).backgroundColor.match(/rgba?\\((\\d+), (\\d+), (\\d+)(?:, ([\\d.]+))?\\)/);
            return {text: e.textContent, value: Number(e.dataset.value), rgb: [m[1], m[2], m[3]].map(Number),
                    alpha: m[4] === undefined ? 1 : Number(m[4])}; })""",
        )

    by_advantage = spans()
    assert len(by_advantage) == 9 and all(s["value"] > 0 for s in by_advantage)
    assert all(s["rgb"] == [18, 128, 92] for s in by_advantage), "a positive advantage is green"
    page.select_option("#token-colour", "logprob")
    by_logprob = spans()
    values = [s["value"] for s in by_logprob]
    assert values == sorted(values, reverse=True), "the fixture's log-probabilities fall along the completion"
    alphas = [s["alpha"] for s in by_logprob]
    assert alphas == sorted(alphas) and alphas[0] < alphas[-1], "the less likely a token, the stronger its colour"
    page.select_option("#token-colour", "trained")
    masked = [s["text"] for s in spans() if s["rgb"] == [102, 112, 133]]
    assert masked == ["The number", " is higher"], "the tool's result is not in the loss"
    assert "guess" in page.inner_text("#timeline")
    pieces = page.eval_on_selector_all("#timeline .tl-piece", "els => els.map(e => e.className)")
    assert pieces == ["tl-piece generation", "tl-piece tool"], "0.35 s of generation, then the call"
    page.screenshot(path=str(ARTIFACTS / "trajectory-viewer.png"), full_page=False)

    page.click("#group-view .episode:nth-child(1) .token-link")  # reward 0.0: a negative advantage
    page.select_option("#token-colour", "advantage")
    page.wait_for_function("() => document.querySelector('#tokens .tok').dataset.value.startsWith('-')")
    assert all(s["rgb"] == [196, 50, 10] for s in spans()), "a negative advantage is red"
    assert not errors, errors


def test_an_alert_shows_live_on_the_run_page_and_in_the_runs_list(dana_runs, daphne_server, browser):
    from tests.e2e.test_external_run_page import orm
    from webapp.runs.ingest import metrics_ingest

    run, _, _ = dana_runs
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    runs_list = context.new_page()
    log_in(runs_list, daphne_server, "dana")
    chip = runs_list.locator(f'tr[data-run="{run.pk}"] [data-alerts]')
    assert chip.is_hidden()
    run_page = context.new_page()
    run_page.goto(f"{daphne_server}/runs/{run.pk}/")
    run_page.wait_for_selector("#no-alerts")
    run_page.wait_for_function("() => document.body.dataset.live === 'connected'")
    runs_list.wait_for_timeout(500)  # the list's socket too

    # The reward collapses: four steps that pay nothing after thirty that paid 0.2 to 0.8.
    batch = [(step, 2000.0 + step, {"reward": 0.0}) for step in range(31, 35)]
    orm(metrics_ingest, run.pk, batch, team_id=run.team_id, max_steps=40)
    run_page.wait_for_selector('#alert-list [data-rule="reward_collapse"]')
    assert "Reward collapse" in run_page.inner_text("#alerts") and "at step 34" in run_page.inner_text("#alerts")
    runs_list.wait_for_function(f"() => !document.querySelector('tr[data-run=\"{run.pk}\"] [data-alerts]').hidden")
    assert chip.inner_text() == "1 alert"

    # Muted on this run from its page: the card says so.
    run_page.click("#alerts summary")
    run_page.click('#alerts tr[data-rule="reward_collapse"] button.mute')
    run_page.wait_for_selector('#alerts tr[data-rule="reward_collapse"] .chip.warn', state="attached")
    assert not run_page.locator('#alert-list [data-rule="reward_collapse"]').count()
