"""The reference host: plays the Hermes agent around a context engine and records what it did."""
