"""``python -m xor_ack_dynamodb.cli``: the ``xor-ack`` command, where its script is not on
the PATH (a virtualenv not activated, a cluster's Python)."""

from . import main

if __name__ == "__main__":
    main()
