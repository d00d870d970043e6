"""Tools agents call: the executor protocol (specs, file tools and sandboxes come later)."""
