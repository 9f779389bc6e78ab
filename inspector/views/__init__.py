"""Views: pure functions from engine snapshots to pandas DataFrames and matplotlib Figures.

No widgets here; a test can call every view with a hand-made snapshot.
"""
