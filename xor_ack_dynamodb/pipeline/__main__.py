"""``python -m xor_ack_dynamodb.pipeline wordcount ...``; also a script path for spark-submit.

Absolute imports on purpose: ``spark-submit .../xor_ack_dynamodb/pipeline/__main__.py``
runs this file as a script, not as part of the package.
"""

from xor_ack_dynamodb.pipeline.cli import main

if __name__ == "__main__":
    main(prog_name="xor-ack-pipeline")
