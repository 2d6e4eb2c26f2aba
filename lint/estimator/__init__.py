"""Memory estimator (see DESIGN.md, "The estimator")."""
