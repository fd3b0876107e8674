"""harness_g.training (see DESIGN.md)."""
