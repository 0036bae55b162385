"""The SageMaker backend: the boto3 calls that deploy, start, watch, schedule, alert on and inspect the pipeline.

Imports ``pipeline.core`` and ``pipeline.definition`` only (``tests/contract/test_layers.py``), never the local backend.
"""
