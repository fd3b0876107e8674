"""harness_g.agent (see DESIGN.md)."""
