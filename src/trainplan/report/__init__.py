"""Rendering of results for people (text tables) and scripts (JSON). No formulas here."""
