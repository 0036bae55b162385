"""The definition: configuration, pipeline parameters, code bundles, the client-side schema, and the SDK v3 builders
of the DAG, built offline (``pipeline.definition.build``). Imports only ``pipeline.core``
(``tests/contract/test_layers.py``).
"""
