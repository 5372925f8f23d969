"""Figures the chapters draw: one call per figure, so a chapter shows the idea, not the plotting."""
