"""The run page's and the runs list's WebSocket consumers (what they show is runs; the live app only stores and
publishes the messages). Membership is checked on connect; a page that reconnects sends the last sequence number it
saw (?after=N) and gets exactly the missed messages from the database, then live ones, with none twice."""

from __future__ import annotations

import json

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from webapp.accounts.selectors import team_list_for_user
from webapp.live.groups import run_group, team_runs_group

REFUSED = 4403
REPLAY_LIMIT = 5000


@database_sync_to_async
def _readable_run(user, run_id: int):
    from webapp.runs.selectors import run_list

    return run_list(user=user).filter(pk=run_id).values("pk", "last_seq").first()


@database_sync_to_async
def _events_after(run_id: int, seq: int) -> list[dict]:
    from webapp.live.models import RunEvent

    rows = RunEvent.objects.filter(run_id=run_id, seq__gt=seq).order_by("seq")[:REPLAY_LIMIT]
    return [{"seq": r.seq, "type": r.type, **r.payload} for r in rows]


@database_sync_to_async
def _team_ids(user) -> list[int]:
    return list(team_list_for_user(user=user).values_list("pk", flat=True))


class RunConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
        user = self.scope.get("user")
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        if user is None or not user.is_authenticated or await _readable_run(user, self.run_id) is None:
            await self.close(code=REFUSED)
            return
        self.last_seq = 0
        # Join first, then replay: anything published meanwhile arrives by the group and is dropped if replayed.
        await self.channel_layer.group_add(run_group(self.run_id), self.channel_name)
        await self.accept()
        await self.replay(self._after_from_query())

    def _after_from_query(self) -> int:
        query = self.scope.get("query_string", b"").decode()
        for part in query.split("&"):
            if part.startswith("after="):
                try:
                    return max(0, int(part.removeprefix("after=")))
                except ValueError:
                    return 0
        return 0

    async def replay(self, after: int) -> None:
        self.last_seq = after
        while True:
            events = await _events_after(self.run_id, self.last_seq)
            if not events:
                break
            await self.send_json({"type": "batch", "messages": events})
            self.last_seq = events[-1]["seq"]
            if len(events) < REPLAY_LIMIT:
                break

    async def receive_json(self, content, **kwargs) -> None:
        if content.get("type") == "resume":
            await self.replay(int(content.get("after") or 0))

    async def run_messages(self, event) -> None:
        if "text" in event:
            if event["last"] <= self.last_seq:
                return
            if event["first"] == self.last_seq + 1:  # the usual case: the frame as encoded once by the publisher
                self.last_seq = event["last"]
                await self.send(text_data=event["text"])
                return
            event = {"messages": json.loads(event["text"])["messages"]}  # overlaps a replay: keep what is new
        fresh = [m for m in event["messages"] if m["seq"] > self.last_seq]
        if not fresh:
            return
        if fresh[0]["seq"] != self.last_seq + 1:
            # A gap (messages published out of order across processes): fill it from the database.
            await self.replay(self.last_seq)
            return
        self.last_seq = fresh[-1]["seq"]
        await self.send_json({"type": "batch", "messages": fresh})

    async def disconnect(self, code) -> None:
        if hasattr(self, "last_seq"):
            await self.channel_layer.group_discard(run_group(self.run_id), self.channel_name)


class RunsListConsumer(AsyncJsonWebsocketConsumer):
    """Status changes of every run in the user's teams, for the runs list's chips."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=REFUSED)
            return
        self.groups_joined = [team_runs_group(team_id) for team_id in await _team_ids(user)]
        for group in self.groups_joined:
            await self.channel_layer.group_add(group, self.channel_name)
        await self.accept()

    async def runs_messages(self, event) -> None:
        await self.send_json({"type": "runs", "run_id": event["run_id"], "messages": event["messages"]})

    async def disconnect(self, code) -> None:
        for group in getattr(self, "groups_joined", []):
            await self.channel_layer.group_discard(group, self.channel_name)
