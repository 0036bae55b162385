"""The local backend: runs the pipeline's own definition JSON on this machine with SageMaker's contracts.

``runner`` prepares one execution once (``LocalRun.prepare``: plan, parameters, job runners, ``preflight`` checks,
the data of ``data`` and its schema) and executes it (``PreparedRun.execute``); ``plan`` checks the definition,
``interpreter`` schedules it (ordering, concurrency, Condition/Fail, not-reached steps) with ``expressions``,
``conditions`` and ``cache``; ``jobs/`` holds one runner per step type behind ``jobs/contract.py``; ``executions``
keeps the records, ``registry`` the model registry, ``s3`` the local S3 folder, ``workdir`` the layout.
"""
