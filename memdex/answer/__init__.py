"""Answer mode: modes, refinement, passages, synthesis through Claude or extractive, citations."""
