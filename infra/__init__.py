"""Everything that fetches, starts and inspects the platform's real components."""
