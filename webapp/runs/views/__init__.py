"""The runs app's views, by concern: pages, data (JSON, the log), actions, compare; access is the one lookup."""
