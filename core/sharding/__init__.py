"""Layout maths, placement, the design file and the operator rules (see CONTRIBUTING's map)."""
