"""The local backend: runs the pipeline's own definition JSON on this machine with SageMaker's contracts.

``interpreter`` (ordering, concurrency, Condition/Fail, not-reached steps) uses ``expressions`` (Get, Std:Join,
Std:JsonGet), ``conditions``, ``parameters`` and ``cache``; ``jobs/`` holds one runner per step type; ``executions``
keeps the records; ``runner`` stages code and data and runs one execution; ``progress`` and ``summary`` show it.
"""
