"""A PySpark worker daemon that imports the library's modules once, before it forks.

PySpark forks every Python worker from one daemon process.  The stock daemon
has imported next to nothing, so each new worker pays for importing boto3,
botocore and this package (seconds on a slow disk).  Set
``spark.python.daemon.module=xor_ack_dynamodb.spark.daemon`` (the local
sessions of :func:`~xor_ack_dynamodb.pipeline.spark.build_session` do) and the
workers start with them already imported.  Nothing is connected or started
before the fork: only modules are loaded.
"""

import boto3  # noqa: F401
import botocore.session  # noqa: F401
from pyspark.daemon import manager

if __name__ == "__main__":
    manager()
