"""Who sees what: view rules over skills and tools, and the reader every surface reads skills through."""
