"""The shared routing strategy against the evaluation fixtures, in both modes, plus the `route` presenter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from hindsight_batch.config import Settings
from hindsight_batch.errors import ConfigError
from hindsight_batch.routing import route_text, strategy_for
from hindsight_batch.routing.models import USER_BANK_MIN_CONFIDENCE, MemoryRouteDecision
from tests.conftest import invoke

FIXTURES = json.loads((Path(__file__).parent / "fixtures" / "routing" / "cases.json").read_text())["cases"]
TAXONOMY = {
    "durable User Bank preference", "stable identity preference", "cross-project workflow habit",
    "project architecture fact", "project implementation decision", "project delivery state",
    "project-scoped user preference", "identity-like fact embedded in project work",
    "ambiguous project/User Bank content", "secret or credential-like content", "transient screenshot/artifact",
    "temporary command/test output",
}


def settings_for(mode: str, policy: str = "redact", **extra: Any) -> Settings:
    return Settings.model_validate({
        "userRetain": {"mode": mode},
        "banks": {"project": {"bankId": "proj-bank"}, "user": {"bankId": "user-bank", "enabled": True}},
        "redaction": {"policy": policy},
        **extra,
    })


def route(case: dict[str, Any], mode: str) -> MemoryRouteDecision:
    decision, _ = route_text(settings_for(mode, case.get("policy", "redact")), case["content"],
                             context=case.get("context"), base_tags=["harness:pi", "project:acme"])
    return decision


def test_fixtures_cover_every_taxonomy_item_at_least_four_times() -> None:
    assert len(FIXTURES) >= 48
    for item in TAXONOMY:
        assert sum(case["category"] == item for case in FIXTURES) >= 4, item
    assert {case["category"] for case in FIXTURES} == TAXONOMY


@pytest.mark.parametrize("case", FIXTURES, ids=[c["id"] for c in FIXTURES])
def test_router_mode_decision_matches_the_fixture(case: dict[str, Any]) -> None:
    decision = route(case, "router")
    assert decision.route == case["route"], decision.reason
    assert decision.confidence >= case["minConfidence"]
    assert set(case.get("signals", [])) <= set(decision.signals)
    for note in case.get("notes", []):
        assert any(note in n for n in decision.safety_notes), (note, decision.safety_notes)
    assert decision.writes == case["routerWrites"]
    assert [t.bank_id for t in decision.targets if t.will_write] == [
        {"project": "proj-bank", "global": "user-bank"}[role] for role in case["routerWrites"]
    ]
    assert decision.mode == "router" and decision.reason.startswith("router mode")


@pytest.mark.parametrize("case", FIXTURES, ids=[c["id"] for c in FIXTURES])
def test_explicit_only_mode_never_writes_the_user_bank(case: dict[str, Any]) -> None:
    decision = route(case, "explicit-only")
    assert decision.route == case["route"]
    assert "global" not in decision.writes
    assert all(not t.will_write for t in decision.targets if t.bank_role == "global")
    expected = [] if case["route"] == "skip" else ["project"]
    assert decision.writes == expected


@pytest.mark.parametrize("case", [c for c in FIXTURES if c["category"] == "secret or credential-like content"],
                         ids=lambda c: c["id"])
def test_no_user_bank_write_for_content_with_a_secret_in_any_mode(case: dict[str, Any]) -> None:
    for mode in ("explicit-only", "router"):
        for policy in ("redact", "skip"):
            decision, redacted = route_text(settings_for(mode, policy), case["content"])
            assert "global" not in decision.writes
            assert "ghp_16C7e42F292c6912E7710c838347Ae178B4a" not in redacted


def test_a_user_bank_only_route_needs_high_confidence() -> None:
    for case in FIXTURES:
        decision = route(case, "router")
        if decision.writes == ["global"]:
            assert decision.confidence >= USER_BANK_MIN_CONFIDENCE


def test_ambiguous_content_never_goes_to_the_user_bank_alone() -> None:
    for case in (c for c in FIXTURES if c["category"] == "ambiguous project/User Bank content"):
        decision = route(case, "router")
        assert "project" in decision.writes
        assert any("route:both" in t.tags for t in decision.targets)


def test_a_missing_or_disabled_user_bank_drops_that_target_with_a_note() -> None:
    settings = Settings.model_validate({"userRetain": {"mode": "router"}, "banks": {"project": {"bankId": "p"}}})
    decision, _ = route_text(settings, "I prefer terse answers across all my projects.")
    assert decision.route == "global" and decision.writes == ["project"]
    assert any("User Bank disabled or without a bank id" in n for n in decision.safety_notes)
    both, _ = route_text(settings, FIXTURES[[c["id"] for c in FIXTURES].index("amb-1")]["content"])
    assert both.route == "both" and both.writes == ["project"]


def test_dry_run_only_strategy_explains_but_writes_nothing() -> None:
    settings = settings_for("router", routing={"strategy": "dry-run-only"})
    decision, _ = route_text(settings, "I prefer terse answers across all my projects.")
    assert decision.route == "global" and decision.writes == [] and decision.strategy == "dry-run-only"
    assert all(not t.will_write for t in decision.targets)


def test_unknown_strategy_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"routing\.strategy"):
        strategy_for(Settings.model_validate({"routing": {"strategy": "named-bank"}}))


def test_classification_ignores_json_keys_and_structure() -> None:
    """An earlier router read pretty-printed JSON, so every tool call looked like "identity" and "project"."""
    record = {"message": {"role": "assistant", "content": [
        {"type": "toolCall", "name": "nickname_tool", "arguments": {"name": "x", "path": "y", "identity": "z"}}]}}
    decision, _ = route_text(settings_for("router"), json.dumps(record))
    assert decision.matched_signals == [] and decision.route == "project" and decision.confidence < 0.6


def test_missions_add_signals() -> None:
    settings = settings_for("router", banks={"project": {"bankId": "p", "mission": "Importer checkpoint manifest"},
                                             "user": {"bankId": "u", "enabled": True}})
    decision, _ = route_text(settings, "The checkpoint logic is done.")
    assert "project mission:checkpoint" in decision.matched_signals and decision.route == "project"


def test_route_command_shows_the_decision_and_whether_it_writes(runner: CliRunner, tmp_path: Path) -> None:
    result = invoke(runner, "route", "I prefer terse answers across all my projects.", "--cwd", str(tmp_path))
    assert result.exit_code == 0
    assert "route: User Bank (global)" in result.output
    assert "preview only, not written" in result.output and "explicit-only" in result.output
    assert "tags:" in result.output and "safety:" in result.output
    routed = invoke(runner, "route", "-", "--mode", "router", "--json", "--cwd", str(tmp_path),
                    input="The queue module's architecture uses a lock directory.")
    data = json.loads(routed.output)
    assert data["route"] == "project" and data["mode"] == "router" and data["writes"] == ["project"]
    assert data["targets"][0]["bankId"].startswith("pi-") and "matchedSignals" in data


def test_route_command_never_prints_a_secret(runner: CliRunner, tmp_path: Path) -> None:
    secret = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
    result = invoke(runner, "route", f"my token is {secret}", "--json", "--cwd", str(tmp_path))
    assert secret not in result.output + result.stderr


@pytest.mark.parametrize(("text", "label"), [
    ("We moved this repo's readme.", "project reference"),  # a possessive counts as its word: "this repo"
    ("OK here's my password for the box", "secret-like content"),  # a contraction keeps its "'s"
    ("OK here's the token, as asked", "secret-like content"),
])
def test_possessives_count_as_their_word_and_contractions_stay(text: str, label: str) -> None:
    decision, _ = route_text(settings_for("router"), text)
    assert label in decision.matched_signals


def test_repeated_words_and_phrases_are_each_counted() -> None:
    """One label seen once or many times: the score grows with repeats (capped), so counts must be exact."""
    once, _ = route_text(settings_for("router"), "The architecture note.")
    again, _ = route_text(settings_for("router"), "architecture architecture architecture architecture note")
    assert "architecture" in once.matched_signals and "architecture" in again.matched_signals
    assert again.confidence > once.confidence


SKIP_CODES = {
    "secret or credential-like content": {"secret-policy", "credential-like"},
    "transient screenshot/artifact": {"transient-artifact"},
    "temporary command/test output": {"command-output", "temporary"},
}


@pytest.mark.parametrize("case", FIXTURES, ids=[c["id"] for c in FIXTURES])
def test_a_skip_carries_a_stable_skip_reason_and_nothing_else_does(case: dict[str, Any]) -> None:
    from hindsight_batch.routing.models import SKIP_REASONS

    decision = route(case, "router")
    if decision.route != "skip":
        assert decision.skip_reason is None
        return
    assert decision.skip_reason in SKIP_REASONS
    assert decision.skip_reason in SKIP_CODES.get(case["category"], set(SKIP_REASONS)), decision.reason


def test_secret_policy_skip_is_its_own_skip_reason() -> None:
    decision, _ = route_text(settings_for("router", "skip"), "token ghp_16C7e42F292c6912E7710c838347Ae178B4a here")
    assert decision.route == "skip" and decision.skip_reason == "secret-policy"


def test_a_decision_is_the_adrs_json_and_reads_back_as_itself() -> None:
    """The decision is plain data the strategy made (not validated again): its JSON has the ADR's camelCase keys,
    each target's too, and reads back as the same decision (a row an older version wrote goes that way)."""
    decision, _ = route_text(settings_for("router"), "I prefer terse answers across all my projects.")
    data = decision.as_json()
    assert list(data) == ["route", "confidence", "signals", "matchedSignals", "reason", "mode", "writes", "targets",
                          "safetyNotes", "projectMission", "globalMission", "strategy", "skipReason"]
    assert [list(t) for t in data["targets"]] == [["bankRole", "bankId", "tags", "willWrite"]] * len(data["targets"])
    assert data["targets"] and MemoryRouteDecision.from_json(json.loads(json.dumps(data))) == decision
    older = {key: value for key, value in data.items() if key != "skipReason"}  # before skip_reason existed
    assert MemoryRouteDecision.from_json(older) == decision


def test_the_user_banks_mission_keeps_its_old_name() -> None:
    """``Missions.global_`` (the name before ``user``) still reads the User Bank's mission, and cannot be set."""
    from hindsight_batch.routing.models import Missions

    missions = Missions(project="the project's", user="the user's")
    assert missions.global_ == missions.user == "the user's"
    assert Missions.global_.fset is None  # type: ignore[attr-defined]
