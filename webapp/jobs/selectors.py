from __future__ import annotations

from webapp.accounts.selectors import team_scope
from webapp.jobs.models import Job


def job_get(*, user, pk: int) -> Job:
    """A job the user started, in a team they still belong to; anyone else's does not exist for them."""
    return team_scope(Job.objects.filter(created_by=user), user=user).get(pk=pk)
