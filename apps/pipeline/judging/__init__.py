"""Judging claims against their quotes (issue 43's home for the local judge, as it moves here).

`selective`: the judge's p(supports) calibrated on claims it never saw, and the three outcomes a
claim can have from it: verified, flagged, or unsure.
"""
