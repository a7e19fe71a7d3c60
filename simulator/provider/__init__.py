"""The deterministic provider simulator (OpenAI- and Anthropic-shaped)."""
