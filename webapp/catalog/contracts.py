"""A version's pinned contract (envs.contract), and the check that a running server still matches it."""

from __future__ import annotations

from typing import Any

from envs.contract import contract_diff, contract_hash, contract_of, contract_read
from webapp.catalog.models import EnvironmentVersion


def version_contract(version: EnvironmentVersion) -> dict[str, Any]:
    return contract_of(action=version.action_schema, observation=version.observation_schema,
                       state=version.state_schema, mcp_tools=version.tools if version.mcp else None,
                       transport=version.transport)  # fmt: skip


def version_contract_hash(version: EnvironmentVersion) -> str:
    return version.contract_hash or contract_hash(version_contract(version))


def contract_drift(version: EnvironmentVersion, endpoint: str, *, timeout: float = 10.0) -> list[str]:
    """How the server at `endpoint` differs from what `version` pinned; empty when it matches.
    Raises envs.contract.ContractUnreadable when the server does not say."""
    return contract_diff(version_contract(version), contract_read(endpoint, timeout=timeout))
