"""The MiniLM pair verifier: training (train.py), export (export.py), latency (latency.py)."""
