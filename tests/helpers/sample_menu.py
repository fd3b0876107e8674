"""A hand-made menu (action id -> Action) for parser tests that need no graph."""
from __future__ import annotations

from harness_g.agent.env.actions import Action, ActionType

MENU = {
    a.id: a
    for a in [
        Action("A0", ActionType.SELECT, ("p:0",)),
        Action("A1", ActionType.LOOKUP, ("e_x",)),
        Action("A2", ActionType.ANSWER_WITH, ("p:0",)),
        Action("A3", ActionType.ANSWER, ()),
        Action("A10", ActionType.SELECT, ("p:1",)),
    ]
}
