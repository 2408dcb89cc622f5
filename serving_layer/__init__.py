"""The serving layer: one view per name, whichever design computed it."""
