"""Training code for models the product ships (not imported by the product at run time)."""
