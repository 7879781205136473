"""``spark-submit`` entry point of the word count example (absolute imports: run as a file).

spark-submit --master spark://HOST:7077 run_wordcount.py INPUT OUTPUT --table T
"""

from xor_ack_dynamodb.spark.examples.wordcount import main

if __name__ == "__main__":
    raise SystemExit(main())
