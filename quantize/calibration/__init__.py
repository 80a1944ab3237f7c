"""The calibration set the recipes use (generated, seeded)."""
