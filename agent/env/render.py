"""Observation text, as the paper's appendix "Environment Protocol" describes it."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from harness_g.agent.env.menu import Menu

INSTRUCTION = "Reply with exactly one action id from the menu (e.g. A0). Do not write a search query."


def render_observation(turn: int, max_turns: int, question: str, committed: list[tuple[str, str]], menu: "Menu",
                       error: str | None = None) -> str:
    """``committed`` is ``[(title, text)]`` in commit order; the menu supplies visible sentences,
    entities and actions with their labels (S*, E*, A*)."""
    lines = [f"[Step {turn + 1}/{max_turns}]", f"Question: {question}", "Committed evidence:"]
    if committed:
        lines += [f"  {i + 1}. {title}: {text}" for i, (title, text) in enumerate(committed)]
    else:
        lines.append("  (none)")
    lines.append("Visible sentences:")
    if menu.sentences:
        lines += [f"S{i} | {s.title}: {s.text}" for i, s in enumerate(menu.sentences)]
    else:
        lines.append("  (none)")
    if menu.entities:
        lines.append("Entities (bridge = in committed evidence, question = named in the question, "
                     "frontier = in visible sentences):")
        lines += [f"E{i} | {e.surface} [{role}]" for i, (e, role) in enumerate(zip(menu.entities, menu.entity_roles))]
    lines.append("Actions:")
    lines += [menu.describe(a) for a in menu.actions]
    if error:
        lines.append(f"Invalid action: {error}")
    lines.append(INSTRUCTION)
    return "\n".join(lines)
