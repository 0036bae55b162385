"""The shared vocabulary: names, errors, files, sharding, processes, images, data versions, cost, the step tree.

Imports nothing of ``pipeline`` outside ``pipeline.core`` (``tests/contract/test_layers.py``); every other wing may
use it.
"""
