"""Tests of the countersign package: python3 -W error -m unittest discover."""
