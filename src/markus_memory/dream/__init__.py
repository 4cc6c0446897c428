"""The dream cycle: consolidation of the observation buffer into curated knowledge."""
