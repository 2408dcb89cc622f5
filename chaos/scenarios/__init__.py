"""The scenarios: each ``run(bench, seed) -> Outcome`` injects its faults and checks."""
